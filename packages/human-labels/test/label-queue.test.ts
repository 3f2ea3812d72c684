import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LabelConflictError, LabelLog, LabelRound, readLabels, seededOrder, type Lease, type RecordedVerdict } from "../src/index.js";
import { Clock, comparisons, pickFor, tempDir } from "./helpers.js";

const MINUTE = 60_000;

function round(opts: { n?: number; labelsPerPair?: number; clock?: Clock; dir?: string; leftIsTarget?: (id: string) => boolean } = {}) {
  const dir = opts.dir ?? tempDir();
  const queue = new LabelRound({
    comparisons: comparisons(opts.n ?? 4),
    labelsPerPair: opts.labelsPerPair ?? 1,
    leftIsTarget: opts.leftIsTarget ?? seededOrder(11),
    sink: new LabelLog(dir, 1),
    ...(opts.clock === undefined ? {} : { now: opts.clock.now }),
  });
  return { dir, queue };
}

async function label(queue: LabelRound, annotator: string, want: RecordedVerdict): Promise<Lease> {
  const lease = queue.next(annotator);
  if (lease === null) throw new Error(`nothing for ${annotator}`);
  await queue.submit(lease.leaseId, annotator, pickFor(lease, want), null);
  return lease;
}

describe("LabelRound", () => {
  it("decides each comparison by the majority of three labels, hand-checked", async () => {
    const { dir, queue } = round({ n: 4, labelsPerPair: 3 });
    // per comparison, what ada, bo and cy each want stored
    const plan: Record<string, RecordedVerdict[]> = {
      "r1-c0": ["target", "target", "comparator"],
      "r1-c1": ["tie", "tie", "tie"],
      "r1-c2": ["target", "comparator", "both_bad"],
      "r1-c3": ["comparator", "target", "comparator"],
    };
    const people = ["ada", "bo", "cy"];
    for (let i = 0; i < 4; i++) {
      // all three hold the same comparison at once: it needs three labels
      const leases = people.map((p) => queue.next(p) as Lease);
      expect(new Set(leases.map((l) => l.comparison.id)).size).toBe(1);
      const id = (leases[0] as Lease).comparison.id;
      await Promise.all(leases.map((l, j) => queue.submit(l.leaseId, people[j] as string, pickFor(l, plan[id]?.[j] as RecordedVerdict), `because ${j}`)));
    }
    const outcome = queue.outcome();
    expect(outcome.map((o) => [o.comparisonId, o.verdict, o.agreement])).toEqual([
      ["r1-c0", "target", 2 / 3],
      ["r1-c1", "tie", 1],
      ["r1-c2", null, 1 / 3],
      ["r1-c3", "comparator", 2 / 3],
    ]);
    expect(outcome[0]?.annotators.sort()).toEqual(people);
    expect(outcome[2]?.counts).toEqual({ target: 1, comparator: 1, tie: 0, both_bad: 1 });
    const pairs = queue.pairs();
    expect(pairs.map((p) => [p.comparison.id, p.winner])).toEqual([
      ["r1-c0", "target"],
      ["r1-c3", "comparator"],
    ]);
    expect(pairs[1]?.winnerCompletions).toEqual(["comparator writer 3", "comparator critic 3"]);
    expect(pairs[1]?.loserCompletions).toEqual(["target writer 3", "target critic 3"]);
    expect(queue.progress()).toEqual({ total: 4, decided: 4, labels: 12, inFlight: 0 });
    expect(queue.next("dee")).toBeNull();
    // the file holds exactly the picks, each through its shown order
    const onDisk = await readLabels(dir, 1);
    expect(onDisk).toHaveLength(12);
    for (const r of onDisk) expect(r.verdict).toBe(plan[r.comparison_id]?.[people.indexOf(r.annotator)]);
    expect(onDisk.every((r) => r.shown_left === (seededOrder(11)(r.comparison_id) ? "target" : "comparator"))).toBe(true);
  });

  it("maps screen sides through the shown order", async () => {
    const { queue } = round({ n: 2, leftIsTarget: (id) => id.endsWith("0") });
    const a = queue.next("ada") as Lease;
    expect([a.leftIs, a.left, a.right]).toEqual(["target", a.comparison.target, a.comparison.comparator]);
    expect((await queue.submit(a.leaseId, "ada", "left")).verdict).toBe("target");
    const b = queue.next("ada") as Lease;
    expect([b.leftIs, b.left]).toEqual(["comparator", b.comparison.comparator]);
    const r = await queue.submit(b.leaseId, "ada", "left", "  ");
    expect([r.verdict, r.winner, r.shown_left, r.rationale, r.item_id]).toEqual(["comparator", "comparator", "comparator", null, "item-1"]);
  });

  it("never leases a comparison to more people than it still needs, whatever the interleaving", async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant("next" as const), who: fc.integer({ min: 0, max: 3 }) }),
      fc.record({
        kind: fc.constant("submit" as const),
        which: fc.nat(),
        verdict: fc.constantFrom("left" as const, "right" as const, "tie" as const, "both_bad" as const),
      }),
      fc.record({ kind: fc.constant("skip" as const), which: fc.nat() }),
      fc.record({ kind: fc.constant("wait" as const), minutes: fc.integer({ min: 1, max: 12 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.array(op, { maxLength: 40 }), async (labelsPerPair, ops) => {
        const clock = new Clock();
        const { dir, queue } = round({ n: 3, labelsPerPair, clock });
        const held: Lease[] = [];
        for (const o of ops) {
          if (o.kind === "next") {
            const lease = queue.next(`p${o.who}`);
            if (lease !== null && !held.includes(lease)) held.push(lease);
          } else if (o.kind === "wait") clock.advance(o.minutes * MINUTE);
          else if (held.length > 0) {
            const lease = held[o.which % held.length] as Lease;
            if (o.kind === "skip") queue.skip(lease.leaseId);
            else await queue.submit(lease.leaseId, lease.annotator, o.verdict).catch((e: unknown) => expect(e).toBeInstanceOf(LabelConflictError));
            held.splice(held.indexOf(lease), 1);
          }
          // live leases (not used, not expired) plus labels never exceed what a comparison needs
          const live = held.filter((l) => l.expiresAt > clock.t);
          for (const o2 of queue.outcome()) {
            const liveHere = live.filter((l) => l.comparison.id === o2.comparisonId);
            expect(liveHere.length + o2.labels).toBeLessThanOrEqual(labelsPerPair);
            if (labelsPerPair === 1) expect(liveHere.length).toBeLessThanOrEqual(1);
            expect(new Set(liveHere.map((l) => l.annotator)).size).toBe(liveHere.length);
          }
        }
        const records = await readLabels(dir, 1);
        expect(new Set(records.map((r) => `${r.annotator}/${r.comparison_id}`)).size).toBe(records.length);
        expect(records.length).toBe(queue.progress().labels);
      }),
      { numRuns: 60 },
    );
  });

  it("resumes from the records on disk: decided comparisons are not offered, nobody is asked twice", async () => {
    const dir = tempDir();
    const first = round({ dir, n: 3, labelsPerPair: 2 }).queue;
    await label(first, "ada", "target"); // c0
    await label(first, "ada", "comparator"); // c1
    await label(first, "bo", "target"); // c0 again: decided
    const again = await LabelRound.open({ dir, round: 1, comparisons: comparisons(3), labelsPerPair: 2, leftIsTarget: seededOrder(11) });
    expect(again.progress()).toEqual({ total: 3, decided: 1, labels: 3, inFlight: 0 });
    expect(again.next("ada")?.comparison.id).toBe("r1-c2");
    expect(again.next("bo")?.comparison.id).toBe("r1-c1");
    expect(again.next("cy")?.comparison.id).toBe("r1-c2");
    expect(again.next("dee")).toBeNull(); // c0 decided, c1 and c2 held by as many as they need
    expect(again.outcome()[0]).toMatchObject({ decided: true, verdict: "target", annotators: ["ada", "bo"] });

    const single = await LabelRound.open({ dir, round: 1, comparisons: comparisons(3), labelsPerPair: 1, leftIsTarget: seededOrder(11) });
    expect(single.next("zed")?.comparison.id).toBe("r1-c2");
    expect(single.next("yan")).toBeNull();
  });

  it("gives an expired lease's comparison to someone else and refuses the late pick", async () => {
    const clock = new Clock();
    const { dir, queue } = round({ n: 2, clock });
    const a = queue.next("ada") as Lease;
    expect(a.comparison.id).toBe("r1-c0");
    expect(queue.next("bo")?.comparison.id).toBe("r1-c1");
    clock.advance(9 * MINUTE);
    expect(queue.next("cy")).toBeNull(); // both still held at nine minutes
    expect(queue.next("ada")?.leaseId).toBe(a.leaseId); // a reload gets the same lease back
    clock.advance(MINUTE + 1);
    expect(queue.progress().inFlight).toBe(0);
    const c = queue.next("cy") as Lease;
    expect(c.comparison.id).toBe("r1-c0");
    await expect(queue.submit(a.leaseId, "ada", "left")).rejects.toMatchObject({ reason: "expired_lease" });
    await queue.submit(c.leaseId, "cy", "tie");
    expect((await readLabels(dir, 1)).map((r) => r.annotator)).toEqual(["cy"]);
  });

  it("offers a skipped comparison to others first, and to the skipper only when nothing else is left", () => {
    const { queue } = round({ n: 2 });
    const a = queue.next("ada") as Lease;
    expect(queue.skip(a.leaseId)).toBe(true);
    expect(queue.skip(a.leaseId)).toBe(false);
    expect(queue.next("ada")?.comparison.id).toBe("r1-c1");
    expect(queue.next("bo")?.comparison.id).toBe("r1-c0");
  });

  it("changes nothing for a flood of picks on one lease or comparison", async () => {
    const { dir, queue } = round({ n: 2, labelsPerPair: 2 });
    const lease = queue.next("ada") as Lease;
    const results = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => queue.submit(lease.leaseId, "ada", i % 2 === 0 ? "left" : "right")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(LabelConflictError);
    await expect(queue.submit(lease.leaseId, "ada", "tie")).rejects.toMatchObject({ reason: "unknown_lease" });
    // another lease on the same comparison for the same person does not exist: they are not asked again
    expect(queue.next("ada")?.comparison.id).toBe("r1-c1");
    const bo = queue.next("bo") as Lease;
    await expect(queue.submit(bo.leaseId, "ada", "left")).rejects.toMatchObject({ reason: "foreign_lease" });
    await expect(queue.submit("made-up", "bo", "left")).rejects.toMatchObject({ reason: "unknown_lease" });
    expect(await readLabels(dir, 1)).toHaveLength(1);
    expect(queue.progress()).toMatchObject({ labels: 1, decided: 0 });
  });

  it("returns a lease whose save failed, so the pick can be tried again", async () => {
    let fail = true;
    const dir = tempDir();
    const log = new LabelLog(dir, 1);
    const queue = new LabelRound({
      comparisons: comparisons(1),
      leftIsTarget: () => true,
      sink: { append: (r) => (fail ? Promise.reject(new Error("disk full")) : log.append(r)) },
    });
    const lease = queue.next("ada") as Lease;
    await expect(queue.submit(lease.leaseId, "ada", "left")).rejects.toThrow("disk full");
    expect(queue.progress()).toMatchObject({ labels: 0, inFlight: 1 });
    fail = false;
    await queue.submit(lease.leaseId, "ada", "left");
    expect(await readLabels(dir, 1)).toHaveLength(1);
  });

  it("waits for enough decided comparisons, all of them, or the timeout, and stops on abort", async () => {
    const { queue } = round({ n: 3 });
    const two = queue.waitFor({ minLabels: 2 });
    const all = queue.waitFor();
    await label(queue, "ada", "target");
    await label(queue, "ada", "tie");
    await expect(two).resolves.toMatchObject({ reason: "min_labels", progress: { decided: 2 } });
    await expect(queue.waitFor({ timeoutMs: 20 })).resolves.toMatchObject({ reason: "timeout" });
    const controller = new AbortController();
    const aborted = queue.waitFor({ signal: controller.signal });
    controller.abort(new Error("stop"));
    await expect(aborted).rejects.toThrow("stop");
    await label(queue, "bo", "comparator");
    await expect(all).resolves.toMatchObject({ reason: "all_decided", progress: { decided: 3, total: 3 } });
    await expect(queue.waitFor({ minLabels: 1 })).resolves.toMatchObject({ reason: "all_decided" });
  });

  it("refuses comparisons it cannot show and bad options", () => {
    const sink = new LabelLog(tempDir(), 1);
    const [c] = comparisons(1);
    expect(() => new LabelRound({ comparisons: [c!, c!], leftIsTarget: () => true, sink })).toThrow(/twice/);
    expect(() => new LabelRound({ comparisons: [{ ...c!, roles: ["one"] }], leftIsTarget: () => true, sink })).toThrow(/one entry per agent/);
    expect(() => new LabelRound({ comparisons: [c!], labelsPerPair: 0, leftIsTarget: () => true, sink })).toThrow(RangeError);
  });
});

describe("seededOrder", () => {
  const ids = Array.from({ length: 4000 }, (_, i) => `r3-c${i}`);

  it("is a function of the seed and the id alone", () => {
    const a = ids.map(seededOrder(42));
    expect(ids.map(seededOrder(42))).toEqual(a);
    expect([...ids].reverse().map(seededOrder(42))).toEqual([...a].reverse());
    const b = ids.map(seededOrder(43));
    const differ = a.filter((x, i) => x !== b[i]).length / ids.length;
    expect(differ).toBeGreaterThan(0.4);
    expect(differ).toBeLessThan(0.6);
    expect(() => seededOrder(1.5)).toThrow(RangeError);
  });

  it("puts the target on the left about half the time, with no long runs over neighbouring ids", () => {
    for (const seed of [0, 1, 2026, 2 ** 40]) {
      const left = ids.map(seededOrder(seed));
      const share = left.filter(Boolean).length / ids.length;
      expect(share).toBeGreaterThan(0.46);
      expect(share).toBeLessThan(0.54);
      let run = 1;
      let longest = 1;
      for (let i = 1; i < left.length; i++) longest = Math.max(longest, (run = left[i] === left[i - 1] ? run + 1 : 1));
      expect(longest).toBeLessThan(20);
    }
  });
});

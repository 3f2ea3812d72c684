import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readLabels } from "@pbrl/human-labels";
import { readRoundFile } from "@pbrl/preference-data";
import { labelPageLines, MADPOIterConfig, MADPOIterTrainer, MARLHFIterConfig, MARLHFIterTrainer } from "../src/index.js";
import { HUMAN_RUN_ARGS, ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";
import { startChild } from "./child/run-child.js";
import { labelUrl, moreEs, Person, type Pick, type ShownComparison } from "./human-people.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-human-"));

const HUMAN = { ...ITERATIVE_RUN.args, ...HUMAN_RUN_ARGS };

/** The side a recorded pick names, through the order the page showed. */
function sideOf(shown: ShownComparison, pick: Pick, texts: { target: string[]; comparator: string[] }): "target" | "comparator" | null {
  if (pick === "tie" || pick === "both_bad") return null;
  const leftIsTarget = JSON.stringify(shown.left) === JSON.stringify(texts.target);
  return (pick === "left") === leftIsTarget ? "target" : "comparator";
}

describe("preference_labeler=human", () => {
  it("two people label a madpo_iter run over HTTP: the round files hold exactly their picks, and the agents train on them", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      rewardFunc: undefined,
      log: (l) => lines.push(l),
      onLabelPage: (url) => lines.push(`pbrl: label at ${url}`),
      args: MADPOIterConfig({ ...HUMAN, output_dir: out }),
    });
    let finished = false;
    const run = t.train().finally(() => (finished = true));
    while (labelUrl(lines.join("\n")) === undefined && !finished) await new Promise((r) => setTimeout(r, 20));
    const url = labelUrl(lines.join("\n"))!;
    expect(url.hostname).toBe("127.0.0.1");
    const ana = new Person("ana", url);
    const bo = new Person("bo", url);
    // ana always picks by the letter e's; bo calls everything he sees "both bad" in round 2
    await Promise.all([
      ana.labelUntil(moreEs, () => finished),
      bo.labelUntil(
        (s) => (s.round === 2 ? "both_bad" : moreEs(s)),
        () => finished,
      ),
    ]);
    const result = await run;
    t.dispose();

    expect(ana.picks.length + bo.picks.length).toBe(12); // 6 items × 1 comparison × 2 rounds, each shown to one person
    // asking right after the last pick of the last round, its person hears the labelling is over, and no one earlier
    const heard = [ana, bo].filter((p) => p.picksWhenFinished !== undefined);
    expect(heard.length).toBeGreaterThan(0);
    for (const p of heard) expect(p.picksWhenFinished).toBe(p.picks.length);
    expect(new Set([...ana.picks, ...bo.picks].map((p) => p.comparisonId)).size).toBe(12);
    expect(ana.picks.length).toBeGreaterThan(0);
    expect(bo.picks.length).toBeGreaterThan(0);
    for (const round of [1, 2]) {
      const labels = await readLabels(path.join(out, "human_labels"), round);
      const file = await readRoundFile(path.join(out, "preference_replay", `iteration_000${round}.json`));
      expect(file.scorer).toBe("human");
      const picks = [...ana.picks, ...bo.picks].filter((p) => p.shown.round === round);
      expect(labels.map((l) => l.comparison_id).sort()).toEqual(picks.map((p) => p.comparisonId).sort());
      // each pick with a winner is one pair, winner and loser as the shown order says; ties and both bad none
      const expected = picks.flatMap((p) => {
        const label = labels.find((l) => l.comparison_id === p.comparisonId)!;
        const texts = {
          target: label.shown_left === "target" ? p.shown.left : p.shown.right,
          comparator: label.shown_left === "target" ? p.shown.right : p.shown.left,
        };
        const side = sideOf(p.shown, p.pick, texts);
        expect(label.winner).toBe(side);
        expect(label.annotator).toBe(ana.picks.includes(p) ? "ana" : "bo");
        if (side === null) return [];
        const other = side === "target" ? "comparator" : "target";
        return [JSON.stringify([texts[side], texts[other], p.comparisonId])];
      });
      const pairs = file.pairs.map((r) => JSON.stringify([r.winner_completions, r.loser_completions, r["comparison_id"]]));
      expect(pairs.sort()).toEqual(expected.sort());
      for (const r of file.pairs) {
        expect(r["scorer"]).toBe("human");
        expect(r.winner_reward).toBe(1);
        expect(r.loser_reward).toBe(0);
        expect((r["annotators"] as string[]).length).toBe(1);
      }
    }
    // round 1 had pairs (with e's to prefer), and the agents trained on them
    const metrics = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const round1 = metrics.find((m) => m["kind"] === "round" && m["iter/current_iteration"] === 1)!;
    expect(round1["human/labels"]).toBe(6);
    expect(round1["iter/current_preference_pairs"]).toBeGreaterThan(0);
    expect(result.updates).toBeGreaterThan(0);
    expect(metrics.some((m) => m["kind"] === "train" && m["round"] === 1)).toBe(true);
    // no reward_func: no evaluation, said once
    expect(lines.filter((l) => l.includes("no reward_func: evaluation is skipped")).length).toBeLessThanOrEqual(1);
    expect(result.evalAfter).toBeUndefined();

    // overwrite_output_dir replaces the run, but people's picks are renamed aside, never deleted
    const before = readFileSync(path.join(out, "human_labels", "round_0001.jsonl"));
    const again = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      rewardFunc: undefined,
      log: (l) => lines.push(l),
      onLabelPage: () => undefined,
      args: MADPOIterConfig({ ...HUMAN, num_iterations: 1, human_label_timeout_s: 0.2, overwrite_output_dir: true, output_dir: out }),
    });
    const second = await again.train();
    again.dispose();
    expect(second.rounds[0]!.pairs).toBe(0); // nobody labelled: the timeout dropped every comparison
    const aside = readdirSync(out).filter((n) => n.startsWith("human_labels.before-"));
    expect(aside).toHaveLength(1);
    expect(readFileSync(path.join(out, aside[0]!, "round_0001.jsonl")).equals(before)).toBe(true);
    expect(lines.some((l) => l.includes(`kept the earlier run's picks as ${path.join(out, aside[0]!)}`))).toBe(true);
  }, 240_000);

  it("waits for human_min_labels, then the reward labels what is left (human_fallback=reward); MARLHF's reward model learns from the pairs", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      log: (l) => lines.push(l),
      onLabelPage: (url) => lines.push(`pbrl: label at ${url}`),
      args: MARLHFIterConfig({
        ...HUMAN,
        ...MARLHF_ITER_ARGS,
        preference_scoring_reward: "task",
        num_iterations: 1,
        human_min_labels: 2,
        human_fallback: "reward",
        output_dir: out,
      }),
    });
    let finished = false;
    const run = t.train().finally(() => (finished = true));
    while (labelUrl(lines.join("\n")) === undefined && !finished) await new Promise((r) => setTimeout(r, 20));
    const ana = new Person("ana", labelUrl(lines.join("\n"))!);
    // two "left" picks only: the round then stops waiting
    await ana.labelUntil(
      () => "left",
      () => finished,
      2,
    );
    await run;
    t.dispose();
    const file = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    const byScorer = (s: string) => file.pairs.filter((p) => p["scorer"] === s);
    expect(byScorer("human")).toHaveLength(2);
    expect(file.pairs.length).toBe(byScorer("human").length + byScorer("task").length);
    for (const p of byScorer("task")) expect(p.winner_reward).toBeGreaterThan(p.loser_reward);
    expect(lines.filter((l) => l.includes("people decided"))).toEqual([expect.stringMatching(/people decided 2 of 6 comparisons .*labelled by the reward/)]);
    expect(lines.some((l) => /reward model fitted on \d+ pairs/.test(l))).toBe(true);
  }, 240_000);

  it("with human_labels_per_pair=2 both people see every comparison and a pair needs their majority", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      rewardFunc: undefined,
      onLabelPage: (url) => lines.push(`pbrl: label at ${url}`),
      args: MADPOIterConfig({ ...HUMAN, num_iterations: 1, human_labels_per_pair: 2, output_dir: out }),
    });
    let finished = false;
    const run = t.train().finally(() => (finished = true));
    const url = await waitFor(() => labelUrl(lines.join("\n")));
    const ana = new Person("ana", url);
    const bo = new Person("bo", url);
    // bo agrees with ana on even items only
    const flip = (p: Pick): Pick => (p === "left" ? "right" : p === "right" ? "left" : p);
    await Promise.all([
      ana.labelUntil(
        () => "left",
        () => finished,
      ),
      bo.labelUntil(
        (s) => (Number(s.comparisonId.slice(7, 11)) % 2 === 0 ? "left" : flip("left")),
        () => finished,
      ),
    ]);
    await run;
    t.dispose();
    expect(ana.picks).toHaveLength(6);
    expect(bo.picks).toHaveLength(6);
    const file = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    // the three comparisons they agreed on are pairs, by both of them; a 1–1 split makes none
    expect(file.pairs.map((p) => Number((p["comparison_id"] as string).slice(7, 11)) % 2)).toEqual([0, 0, 0]);
    for (const p of file.pairs) {
      expect([...(p["annotators"] as string[])].sort()).toEqual(["ana", "bo"]);
      expect(p["agreement"]).toBe(1);
      const shown = ana.picks.find((x) => x.comparisonId === p["comparison_id"])!.shown;
      expect(p.winner_completions).toEqual(shown.left);
    }
  }, 240_000);

  it("beyond loopback the run says the token is the only lock, next to the link", async () => {
    const printed: [string, string | undefined][] = [];
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      rewardFunc: undefined,
      onLabelPage: (url, warning) => printed.push([url, warning]),
      args: MADPOIterConfig({ ...HUMAN, num_iterations: 1, human_label_host: "0.0.0.0", human_label_timeout_s: 0.1, output_dir: tmp() }),
    });
    await t.train();
    t.dispose();
    expect(printed).toHaveLength(1);
    expect(printed[0]![0]).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/\?token=/);
    expect(printed[0]![1]).toMatch(/beyond loopback.*the token is the only lock/);
    expect(labelPageLines(...printed[0]!)).toMatch(/^pbrl: warning: .*\npbrl: label at http/);
  }, 240_000);

  it("refuses what cannot work, before output_dir is touched", () => {
    expect(() => MADPOIterConfig({ human_pairs_per_item: 2 })).toThrow(/human_pairs_per_item: is only valid with preference_labeler="human"/);
    expect(() => MARLHFIterConfig({ preference_labeler: "human", preference_scoring_reward: "reward_model" })).toThrow(/choose one/);
    expect(() => MADPOIterConfig({ preference_labeler: "human", human_fallback: "reward" })).toThrow(/set human_min_labels or human_label_timeout_s/);
    const out = path.join(tmp(), "run");
    expect(
      () =>
        new MADPOIterTrainer({
          ...ITERATIVE_RUN,
          rewardFunc: undefined,
          args: MADPOIterConfig({ ...HUMAN, human_fallback: "reward", human_label_timeout_s: 5, output_dir: out }),
        }),
    ).toThrow(/human_fallback: "reward" labels undecided comparisons with reward_func, and none was given/);
    expect(() => new MADPOIterTrainer({ ...ITERATIVE_RUN, rewardFunc: undefined, args: MADPOIterConfig({ output_dir: out }) })).toThrow(
      /may be left out only with preference_labeler="human"/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it("a run killed (SIGKILL) while people label resumes with every acknowledged pick, asks none again, and a page left open hears the run restarted", async () => {
    const out = tmp();
    const port = await freePort();
    const env = { PBRL_TEST_HUMAN: String(port) };
    const first = startChild("madpo_iter", out, false, env);
    const url1 = await waitFor(() => labelUrl(first.stdout()));
    const ana = new Person("ana", url1);
    await ana.labelUntil(moreEs, () => false, 3);
    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    const saved = await readLabels(path.join(out, "human_labels"), 1);
    expect(saved.map((l) => l.comparison_id).sort()).toEqual(ana.picks.map((p) => p.comparisonId).sort());

    const second = startChild("madpo_iter", out, true, env);
    const url2 = await waitFor(() => labelUrl(second.stdout()));
    expect(url2.searchParams.get("token")).not.toBe(url1.searchParams.get("token"));
    // the page ana left open talks to the same port with the old token
    const stale = await fetch(new URL("/api/next?annotator=ana", url1), { headers: { "x-pbrl-token": url1.searchParams.get("token")! } });
    expect(stale.status).toBe(403);
    expect(((await stale.json()) as { error: string }).error).toMatch(/the run restarted/);
    let finished = false;
    const exited = second.exited.then((r) => ((finished = true), r));
    const bo = new Person("bo", url2);
    await bo.labelUntil(moreEs, () => finished);
    const r = await exited;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/round 1: 3 picks already saved \(3 of 6 comparisons decided\); not asked again/);
    const round1 = bo.picks.filter((p) => p.shown.round === 1).map((p) => p.comparisonId);
    expect(round1).toHaveLength(3);
    for (const id of round1) expect(ana.picks.map((p) => p.comparisonId)).not.toContain(id);
    const labels = await readLabels(path.join(out, "human_labels"), 1);
    expect(labels).toHaveLength(6);
    expect(new Set(labels.map((l) => l.comparison_id)).size).toBe(6);
    expect(labels.slice(0, 3)).toEqual(saved);
    const file = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    expect(file.pairs.length).toBe(labels.filter((l) => l.winner !== null).length);
  }, 300_000);
});

it("a SIGTERM while a round waits for people stops the run at once, its picks kept, the round untrained", async () => {
  const out = tmp();
  const lines: string[] = [];
  const t = new MADPOIterTrainer({
    ...ITERATIVE_RUN,
    log: (l) => lines.push(l),
    onLabelPage: (url) => lines.push(`pbrl: label at ${url}`),
    args: MADPOIterConfig({ ...HUMAN, output_dir: out }),
  });
  const run = t.train();
  const ana = new Person("ana", await waitFor(() => labelUrl(lines.join("\n"))));
  await ana.labelUntil(moreEs, () => false, 2);
  // what a real signal does to the run's handler (apps/cli/test/signals.test.ts sends real ones)
  process.emit("SIGTERM", "SIGTERM");
  const r = await run;
  t.dispose();
  expect(r.stopped).toBe(true);
  expect(r.rounds).toEqual([]);
  expect(lines.join("\n")).toMatch(/stopped while round 1 waited for labels; every saved pick is in .*human_labels, and resume_from_checkpoint=true continues/);
  expect(await readLabels(path.join(out, "human_labels"), 1)).toHaveLength(2);
  expect(existsSync(path.join(out, "preference_replay", "iteration_0001.json"))).toBe(false);
  // the page is closed with the run
  await expect(fetch(new URL("/api/status", labelUrl(lines.join("\n"))!))).rejects.toThrow();
}, 300_000);

async function waitFor<T>(get: () => T | undefined, timeoutMs = 120_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A port free now (the child binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

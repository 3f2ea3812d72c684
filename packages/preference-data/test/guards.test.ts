// The edges of pair selection and of a round's collections that the other tests pass over: exact
// orders where a sort or a shuffle could be dropped unnoticed, the batches a collection asks for,
// the checks of what a sampler or comparator returns, progress, warnings, messages, and the file
// schemas' own messages. Found by mutation testing (pnpm mutation preference-data).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import {
  collectComparisons,
  collectOpenComparisons,
  collectPreferencePairs,
  nonTiedPairs,
  pairOf,
  PairFileError,
  PairsFileSchema,
  PolicySampler,
  readPairsFile,
  readRoundFile,
  resolveFormatters,
  selectComparisons,
  selectOpenComparisons,
  selectPairs,
  writePairsFile,
  writeRoundFile,
  type AgentSamples,
  type CandidateSampler,
  type CandidateSet,
  type Comparator,
  type Prompt,
  type TaskItem,
} from "../src/index.js";

const allValid = (n: number) => ({ target: Array(n).fill(true) as boolean[], comparator: Array(n).fill(true) as boolean[] });
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-guards-"));

describe("selection orders, exactly", () => {
  it("nonTiedPairs lists every winner over every lower candidate, never a candidate against itself", () => {
    expect(nonTiedPairs([0.5, 0.25, 0.5, 1]).map((p) => [...p.pair, p.gap])).toEqual([
      [0, 1, 0.25],
      [2, 1, 0.25],
      [3, 0, 0.5],
      [3, 1, 0.75],
      [3, 2, 0.5],
    ]);
  });

  it("selectPairs: all keeps enumeration order, reward_gap sorts by gap keeping that order for equal gaps, random needs its stream", () => {
    const rewards = [0.5, 0.25, 0.5, 1];
    expect(selectPairs(rewards, "all", null)).toEqual([
      [0, 1],
      [2, 1],
      [3, 0],
      [3, 1],
      [3, 2],
    ]);
    expect(selectPairs(rewards, "reward_gap", null)).toEqual([
      [3, 1],
      [3, 0],
      [3, 2],
      [0, 1],
      [2, 1],
    ]);
    expect(() => selectPairs(rewards, "random", 2)).toThrow("pair_selection=random needs a seeded RngStream");
    // some seed puts the pairs out of enumeration order: the shuffle happens
    const orders = Array.from({ length: 8 }, (_, s) => JSON.stringify(selectPairs(rewards, "random", null, RngStream.fromSeed(s, "p"))));
    expect(orders.some((o) => o !== JSON.stringify(selectPairs(rewards, "all", null)))).toBe(true);
  });

  it("selectComparisons: reward_gap and comparator_reward sort, equal keys in index order; random shuffles and needs its stream", () => {
    // j:          0     1     2     3
    const target = [0.5, 1, 0.75, 0.5];
    const comparator = [0.25, 0, 0.5, 0.25];
    // gaps 0.25, 1, 0.25, 0.25, all won by the target; comparator rewards 0.25, 0, 0.5, 0.25
    expect(selectComparisons(target, comparator, allValid(4), "reward_gap", null).map((c) => c.index)).toEqual([1, 0, 2, 3]);
    expect(selectComparisons(target, comparator, allValid(4), "comparator_reward", null).map((c) => c.index)).toEqual([2, 0, 3, 1]);
    expect(() => selectComparisons(target, comparator, allValid(4), "random", 2)).toThrow("pair_selection=random needs a seeded RngStream");
    const byIndex = JSON.stringify([0, 1, 2, 3]);
    const orders = Array.from({ length: 8 }, (_, s) =>
      JSON.stringify(selectComparisons(target, comparator, allValid(4), "random", null, RngStream.fromSeed(s, "c")).map((c) => c.index)),
    );
    expect(orders.some((o) => o !== byIndex)).toBe(true);
    expect(orders.every((o) => JSON.stringify((JSON.parse(o) as number[]).sort()) === byIndex)).toBe(true);
  });

  it("selectOpenComparisons: random puts some order other than the index order", () => {
    const orders = Array.from({ length: 8 }, (_, s) => JSON.stringify(selectOpenComparisons(allValid(4), "random", 4, RngStream.fromSeed(s, "o"))));
    expect(orders.some((o) => o !== JSON.stringify([0, 1, 2, 3]))).toBe(true);
    // a comparator side longer than the target's adds nothing
    expect(selectOpenComparisons({ target: [true, true], comparator: [true, true, true] }, "index", 5)).toEqual([0, 1]);
  });
});

/** Counts the batches a collection asks the agents for, around the real sampler. */
class CountingSampler implements CandidateSampler {
  readonly batches: number[] = [];
  constructor(private readonly inner: CandidateSampler) {}
  sample(prompts: readonly (readonly Prompt[])[], n: number, itemIndices?: readonly number[]): AgentSamples[][] | Promise<AgentSamples[][]> {
    this.batches.push(prompts.length);
    return this.inner.sample(prompts, n, itemIndices);
  }
}

/** Answers "x e" / "x" by candidate parity; `sets` overrides how many candidate sets it returns. */
class PlainComparator implements Comparator {
  readonly description = "plain";
  constructor(private readonly sets?: number) {}
  async beginRound() {}
  async sample(_items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    const one = (agents: readonly string[]): CandidateSet => ({
      texts: agents.map(() => Array.from({ length: n }, (_, j) => (j % 2 === 0 ? " x e" : " x"))),
      valid: Array.from({ length: n }, () => true),
    });
    return prompts.slice(0, this.sets ?? prompts.length).map(one);
  }
  async endRound() {}
  dispose() {}
}

describe("a round's collections", async () => {
  const p = await loadPretrained(TINY_LLAMA);
  const policy = { model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
  const items = ["The cat", "We drink", "A bird", "Snow falls", "The river"].map((prompt) => ({ prompt }));
  const settings = { maxNewTokens: 3, temperature: 1, topP: 1, topK: null, maxBatchRows: 16 };
  const sampler = (extra: object = {}) => new CountingSampler(new PolicySampler([policy, policy], { ...settings, ...extra }, RngStream.fromSeed(0, "policy")));
  const countE = (c: string[][]) => c[0]!.map((x, j) => (x + c[1]![j]!).split("e").length - 1);
  const common = (s: CountingSampler) => ({
    items,
    formatters: resolveFormatters(undefined, 2),
    agents: [policy, policy],
    comparator: new PlainComparator(),
    sampler: s,
    numCandidates: 2,
    comparatorNumCandidates: 2,
    rewardConcurrency: 2,
    itemsPerBatch: 2,
  });

  it("collectComparisons: batches of itemsPerBatch, progress per batch, itemsWithPairs, both rewards of each pair, isValid on both sides", async () => {
    const s = sampler();
    const done: [number, number][] = [];
    const checked: string[][] = [];
    const r = await collectComparisons({
      ...common(s),
      rewardFunc: countE,
      pairSelection: "all",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
      // candidate 1 of every side is unusable
      isValid: (texts) => (checked.push([...texts]), texts[0] !== " x"),
      onProgress: (d, total) => done.push([d, total]),
    });
    expect(s.batches).toEqual([2, 2, 1]);
    expect(done).toEqual([
      [2, 5],
      [4, 5],
      [5, 5],
    ]);
    expect(r.invalid).toEqual({ target: 0, comparator: 5 }); // " x": the comparator's candidate 1 of each item
    expect(checked.filter((t) => t[0] === " x")).toHaveLength(5);
    expect(r.itemsWithPairs).toBe(new Set(r.pairs.map((x) => x.itemIndex)).size);
    expect(r.itemsWithPairs).toBeGreaterThan(0);
    for (const pair of r.pairs) {
      const { record } = pair;
      expect(record.winner_reward).toBeGreaterThan(record.loser_reward);
      expect(record.raw_rewards).toEqual([record.winner_reward, record.loser_reward]);
      // the comparator side of the pair is its candidate 0 (1 is invalid): " x e" for both agents, 4 e's less the target's
      const comparatorSide = record.winner_completions[0] === " x e" ? "winner" : "loser";
      expect(record[`${comparatorSide}_reward`]).toBe(record.comparator_raw_reward);
    }
  });

  it("with known rewards: the candidate mean over both sides' valid candidates, the winner's and the loser's rewards, pairOf either way", async () => {
    // the comparator's texts start with " x": 10 + j there, j on the agents' side
    const known = (c: string[][]) => c[0]!.map((t, j) => (t.startsWith(" x") ? 10 + j : j));
    const r = await collectComparisons({
      ...common(sampler()),
      rewardFunc: known,
      isValid: (texts) => texts[0] !== " x",
      pairSelection: "all",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
    });
    // per item: valid target [0, 1], comparator [10] (its candidate 1 is invalid): one pair, the comparator's j = 0 over the target's
    expect(r.pairs).toHaveLength(5);
    expect(r.wins).toEqual({ target: 0, comparator: 5 });
    for (const { record } of r.pairs) {
      expect(record.candidate_reward_mean).toBeCloseTo(11 / 3, 12);
      expect([record.winner_reward, record.loser_reward]).toEqual([10, 0]);
      expect(record.winner_completions).toEqual([" x e", " x e"]);
    }
    const open = await collectOpenComparisons({ ...common(sampler()), comparisonsPerItem: 1, order: "index" });
    const c = open.comparisons[0]!;
    const byTarget = pairOf(c, "target", { winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 });
    expect([byTarget.record.winner_completions, byTarget.record.loser_completions]).toEqual([c.target.texts, c.comparator.texts]);
    expect(byTarget.tokens.map((t) => [t.winnerIds, t.loserIds])).toEqual(c.target.tokenIds.map((ids, a) => [ids, c.comparator.tokenIds[a]]));
  });

  it("a dataset that fills its last batch exactly gets no empty batch after it", async () => {
    const four = { items: items.slice(0, 4) };
    const base = { pairSelection: "all" as const, pairsPerSample: null, selectionRng: RngStream.fromSeed(0, "sel"), rewardFunc: countE };
    for (const run of [
      (s: CountingSampler) => collectComparisons({ ...common(s), ...four, ...base }),
      (s: CountingSampler) => collectOpenComparisons({ ...common(s), ...four, comparisonsPerItem: 1, order: "index" }),
      (s: CountingSampler) => collectPreferencePairs({ ...common(s), ...four, ...base }),
    ]) {
      const s = sampler();
      await run(s);
      expect(s.batches).toEqual([2, 2]);
    }
  });

  it("collectOpenComparisons asks for the same batches and reports the same progress", async () => {
    const s = sampler();
    const done: number[] = [];
    await collectOpenComparisons({ ...common(s), comparisonsPerItem: 1, order: "index", onProgress: (d) => done.push(d) });
    expect(s.batches).toEqual([2, 2, 1]);
    expect(done).toEqual([2, 4, 5]);
    const pairs = await collectPreferencePairs({
      ...common(sampler()),
      rewardFunc: countE,
      pairSelection: "all",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
      onProgress: (d) => done.push(d),
    });
    expect(done).toEqual([2, 4, 5, 2, 4, 5]);
    expect(pairs.candidateRewards).toHaveLength(5);
  });

  it("say which side failed, a comparator that answers too few items, an empty dataset, and prompts cut by max_prompt_length", async () => {
    const failing = (side: number) => (c: string[][]) => {
      if (c[0]!.some((t) => t.startsWith(" x")) === (side === 1)) throw new Error("oracle down");
      return c[0]!.map(() => 0);
    };
    const base = { pairSelection: "all" as const, pairsPerSample: null, selectionRng: RngStream.fromSeed(0, "sel") };
    await expect(collectComparisons({ ...common(sampler()), ...base, rewardFunc: failing(1) })).rejects.toThrow(/comparator side/);
    await expect(collectComparisons({ ...common(sampler()), ...base, rewardFunc: failing(0) })).rejects.toThrow(/agents' side/);
    await expect(collectComparisons({ ...common(sampler()), ...base, comparator: new PlainComparator(1), rewardFunc: countE })).rejects.toThrow(
      "comparator plain returned 1 candidate sets for 2 items",
    );
    await expect(collectOpenComparisons({ ...common(sampler()), items: [], comparisonsPerItem: 1, order: "index" })).rejects.toThrow(
      /no task items to collect comparisons from/,
    );
    for (const collect of [
      (o: ReturnType<typeof common> & { onWarning: (m: string) => void }) => collectComparisons({ ...o, ...base, rewardFunc: countE }),
      (o: ReturnType<typeof common> & { onWarning: (m: string) => void }) => collectOpenComparisons({ ...o, comparisonsPerItem: 1, order: "index" }),
    ]) {
      const warnings: string[] = [];
      await collect({ ...common(sampler({ maxPromptLength: 1 })), onWarning: (m) => warnings.push(m) });
      expect(warnings).toEqual([expect.stringMatching(/^max_prompt_length=1: 10 of 10 agent prompts were longer/)]);
    }
  });

  it("a chat prompt for an agent whose tokenizer has no chat template is refused, naming the item and the agent", async () => {
    const chat = resolveFormatters((item: TaskItem) => [{ role: "user", content: String(item["prompt"]) }], 2);
    // the same tokenizer without its template: what a checkpoint lacking chat_template.jinja loads as
    const bare = Object.create(p.tokenizer!, { chatTemplate: { value: undefined } }) as typeof p.tokenizer & object;
    const agents = [policy, { ...policy, tokenizer: bare }];
    await expect(collectOpenComparisons({ ...common(sampler()), formatters: chat, agents, comparisonsPerItem: 1, order: "index" })).rejects.toThrow(
      /^item 0: agent 1's prompt is a list of chat messages, but agent 1's tokenizer has no chat template/,
    );
  });

  it("chat prompts without a tokenizer for an agent are refused, naming it", async () => {
    const chat = resolveFormatters((item: TaskItem) => [{ role: "user", content: String(item["prompt"]) }], 2);
    await expect(collectOpenComparisons({ ...common(sampler()), formatters: chat, agents: [policy], comparisonsPerItem: 1, order: "index" })).rejects.toThrow(
      "no tokenizer for agent 1: agents has 1 entries",
    );
  });
});

describe("pair and round files", () => {
  const record = { prompts: ["p"], winner_completions: ["w"], loser_completions: ["l"], winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 };

  it("a round file says its scorer only when given one", async () => {
    const dir = tmp();
    await writeRoundFile(path.join(dir, "a.json"), 1, [record], "human");
    await writeRoundFile(path.join(dir, "b.json"), 2, [record]);
    expect((await readRoundFile(path.join(dir, "a.json"))).scorer).toBe("human");
    expect("scorer" in (await readRoundFile(path.join(dir, "b.json")))).toBe(false);
  });

  it("names what is wrong: a missing file, a count that does not match, an agent count off, a non-finite reward, a file that is not an object", async () => {
    const dir = tmp();
    const missing = path.join(dir, "none.json");
    await expect(readPairsFile(missing)).rejects.toThrow(new PairFileError(`cannot read pairs file ${missing}: file not found`));
    await expect(readPairsFile(missing)).rejects.toMatchObject({ name: "PairFileError" });
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ num_pairs: 2, pairs: [record] }));
    await expect(readPairsFile(bad)).rejects.toThrow(`pairs file ${bad} does not match the schema: num_pairs: is 2 but the file holds 1 pairs`);
    writeFileSync(bad, JSON.stringify({ num_pairs: 1, pairs: [{ ...record, winner_completions: ["a", "b"], loser_completions: ["a", "b", "c"] }] }));
    await expect(readPairsFile(bad)).rejects.toThrow(
      "pairs.0.winner_completions: has 2 entries but prompts has 1; one per agent; pairs.0.loser_completions: has 3 entries but prompts has 1; one per agent",
    );
    writeFileSync(bad, JSON.stringify({ num_pairs: 1, pairs: [{ ...record, loser_reward: 7 }] }).replace('"loser_reward":7', '"loser_reward":1e999'));
    await expect(readPairsFile(bad)).rejects.toThrow(/pairs\.0\.loser_reward: .*expected number, received Infinity/);
    writeFileSync(bad, "[]");
    await expect(readPairsFile(bad)).rejects.toThrow(/does not match the schema: \(root\): /);
    await expect(writePairsFile(path.join(dir, "w.json"), [{ ...record, winner_reward: Number.POSITIVE_INFINITY }])).rejects.toThrow(
      /refusing to write an invalid pairs file: pairs\.0\.winner_reward: .*expected number, received Infinity/,
    );
    await expect(readRoundFile(bad)).rejects.toThrow(`round file ${bad} does not match the schema`);
    // at most five problems are named, so a broken file does not flood the terminal
    writeFileSync(bad, JSON.stringify({ num_pairs: 6, pairs: Array.from({ length: 6 }, () => ({ ...record, winner_reward: "high" })) }));
    const many = await readPairsFile(bad).then(
      () => "",
      (e: Error) => e.message,
    );
    expect(many.split("; ")).toHaveLength(5);
    // a read error other than a missing file says what it was
    await expect(readPairsFile(dir)).rejects.toThrow(new RegExp(`cannot read pairs file ${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: EISDIR`));
    expect(PairsFileSchema.safeParse({ num_pairs: 1, pairs: [record] }).success).toBe(true);
  });
});

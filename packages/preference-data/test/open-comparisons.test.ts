import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import {
  collectOpenComparisons,
  pairOf,
  pairTokensFromRecord,
  PairRecordSchema,
  PolicySampler,
  resolveFormatters,
  selectOpenComparisons,
  type CandidateSet,
  type Comparator,
  type TaskItem,
} from "../src/index.js";

describe("choosing the comparisons people judge", () => {
  const valid = { target: [true, false, true, true, true], comparator: [true, true, true, false, true, true] };

  it("keeps index-aligned candidates valid on both sides, in index order, the first `limit`", () => {
    // j = 1 is invalid on the target side, 3 on the comparator's, 5 has no target candidate
    expect(selectOpenComparisons(valid, "index", 10)).toEqual([0, 2, 4]);
    expect(selectOpenComparisons(valid, "index", 2)).toEqual([0, 2]);
  });

  it("random is a seeded shuffle of the same candidates", () => {
    const a = selectOpenComparisons(valid, "random", 3, RngStream.fromSeed(7, "s"));
    expect([...a].sort()).toEqual([0, 2, 4]);
    expect(selectOpenComparisons(valid, "random", 3, RngStream.fromSeed(7, "s"))).toEqual(a);
    expect(() => selectOpenComparisons(valid, "random", 1)).toThrow(/seeded RngStream/);
    expect(() => selectOpenComparisons(valid, "index", 0)).toThrow(/integer ≥ 1/);
  });
});

/** Fixed comparator texts "e…e agentA" (j + 1 e's); candidate 1 is invalid, candidate 0 stopped. */
class FixedComparator implements Comparator {
  readonly description = "fixed";
  async beginRound() {}
  async sample(_items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    return prompts.map((agents) => ({
      texts: agents.map((_, a) => Array.from({ length: n }, (_, j) => `${"e".repeat(j + 1)} agent${a}`)),
      valid: Array.from({ length: n }, (_, j) => j !== 1),
      stopped: agents.map(() => Array.from({ length: n }, (_, j) => j === 0)),
    }));
  }
  async endRound() {}
  dispose() {}
}

describe("collecting comparisons for people", () => {
  it("samples both sides, keeps unlabelled comparisons with the tokens to train on, and rewards when a reward is given", async () => {
    const p = await loadPretrained(TINY_LLAMA);
    const policy = { model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
    const settings = { maxNewTokens: 4, temperature: 1, topP: 1, topK: null, maxBatchRows: 8 };
    const base = {
      items: [{ prompt: "The cat" }, { prompt: "We drink" }, { prompt: "A dog" }],
      formatters: resolveFormatters(undefined, 2),
      agents: [policy, policy],
      comparator: new FixedComparator(),
      numCandidates: 3,
      comparatorNumCandidates: 3,
      comparisonsPerItem: 5,
      order: "index" as const,
      itemsPerBatch: 2,
    };
    const sampler = () => new PolicySampler([policy, policy], settings, RngStream.fromSeed(0, "policy"));
    const countE = (c: string[][]) => c[0]!.map((x, j) => (x + c[1]![j]!).split("e").length - 1);
    const done: number[] = [];
    const r = await collectOpenComparisons({ ...base, sampler: sampler(), rewardFunc: countE, rewardProcessor: (x) => x / 2, onProgress: (d) => done.push(d) });
    expect(done).toEqual([2, 3]);
    // candidate 1 of the comparator is invalid: two comparisons per item, j = 0 and 2, ties included
    expect(r.comparisons.map((c) => [c.itemIndex, c.candidate])).toEqual([
      [0, 0],
      [0, 2],
      [1, 0],
      [1, 2],
      [2, 0],
      [2, 2],
    ]);
    expect(r.invalid).toEqual({ target: 0, comparator: 3 });
    expect(r.rawRewards.comparator).toEqual([4, 8, 4, 8, 4, 8]);
    const c = r.comparisons[1]!;
    expect(c.comparator.texts).toEqual(["eee agent0", "eee agent1"]);
    expect(c.rewards!.comparator).toEqual({ processed: 4, raw: 8 });
    expect(c.rewards!.target.processed * 2).toBe(c.rewards!.target.raw);
    // without a reward: the same comparisons (same streams), none scored
    const bare = await collectOpenComparisons({ ...base, sampler: sampler() });
    expect(bare.comparisons.map((x) => [x.itemIndex, x.candidate, x.target.texts])).toEqual(
      r.comparisons.map((x) => [x.itemIndex, x.candidate, x.target.texts]),
    );
    expect(bare.comparisons.every((x) => x.rewards === undefined)).toBe(true);
    expect(bare.rawRewards).toEqual({ target: [], comparator: [] });

    // a verdict for the comparator side makes the pair comparator over target, with tokens that re-create it
    const pair = pairOf(c, "comparator", { winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5, scorer: "human" });
    expect(pair.record.winner_completions).toEqual(c.comparator.texts);
    expect(pair.record.loser_completions).toEqual(c.target.texts);
    expect(pair.record["scorer"]).toBe("human");
    expect(PairRecordSchema.safeParse(pair.record).success).toBe(true);
    expect(pairTokensFromRecord(pair.record, [policy, policy])).toEqual(pair.tokens);
    // the comparator's candidate 0 stopped: EOS appended to its tokens; candidate 2 did not
    expect(r.comparisons[0]!.comparator.tokenIds[0]!.at(-1)).toBe(2);
    expect(c.comparator.tokenIds[0]!.at(-1)).not.toBe(2);
    p.model.dispose();
  });
});

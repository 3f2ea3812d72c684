import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import {
  collectComparisons,
  pairTokensFromRecord,
  PolicySampler,
  resolveFormatters,
  selectComparisons,
  type AgentSamples,
  type CandidateSampler,
  type CandidateSet,
  type Comparator,
  type TaskItem,
} from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const allValid = (n: number) => ({ target: Array(n).fill(true) as boolean[], comparator: Array(n).fill(true) as boolean[] });

describe("index-aligned comparisons (hand-computed)", () => {
  // j:          0    1    2    3    4
  const target = [0.875, 0.25, 0.5, 0.375, 0.625];
  const comparator = [0.125, 0.625, 0.5, 0.25, 0.75];
  // gaps (exact in binary): 0 → target +0.75; 1 → comparator +0.375; 2 tie; 3 → target +0.125; 4 → comparator +0.125

  it("pairs candidate j with candidate j only, either side may win, ties dropped", () => {
    const all = selectComparisons(target, comparator, allValid(5), "all", null);
    expect(all.map((c) => [c.index, c.winner])).toEqual([
      [0, "target"],
      [1, "comparator"],
      [3, "target"],
      [4, "comparator"],
    ]);
  });

  it("comparator_reward puts the strongest comparator sample first", () => {
    expect(selectComparisons(target, comparator, allValid(5), "comparator_reward", 2).map((c) => c.index)).toEqual([4, 1]);
  });

  it("comparator_reward breaks ties between equal comparator rewards by the larger gap, then by index", () => {
    // j:                 0     1     2     3     4
    const t = [0.25, 0.875, 0.625, 0.75, 0.25];
    const c = [0.5, 0.5, 0.5, 0.125, 0.5];
    // comparator 0.5 at j = 0, 1, 2, 4 with gaps 0.25, 0.375, 0.125, 0.25; j = 3 has comparator 0.125 (gap 0.625)
    expect(selectComparisons(t, c, allValid(5), "comparator_reward", null).map((x) => [x.index, x.gap])).toEqual([
      [1, 0.375],
      [0, 0.25],
      [4, 0.25],
      [2, 0.125],
      [3, 0.625],
    ]);
    expect(selectComparisons(t, c, allValid(5), "comparator_reward", 2).map((x) => x.index)).toEqual([1, 0]);
  });

  it("reward_gap puts the largest gap first; equal gaps in index order", () => {
    expect(selectComparisons(target, comparator, allValid(5), "reward_gap", 3).map((c) => c.index)).toEqual([0, 1, 3]);
  });

  it("compares only indices present on both sides and valid on both", () => {
    expect(selectComparisons([1, 0, 1], [0, 1], allValid(3), "all", null).map((c) => c.index)).toEqual([0, 1]);
    const valid = { target: [true, false, true, true, true], comparator: [true, true, true, true, false] };
    expect(selectComparisons(target, comparator, valid, "all", null).map((c) => c.index)).toEqual([0, 3]);
  });

  it("random is seeded; all rejects a limit", () => {
    const a = selectComparisons(target, comparator, allValid(5), "random", 2, RngStream.fromSeed(1, "s"));
    expect(selectComparisons(target, comparator, allValid(5), "random", 2, RngStream.fromSeed(1, "s"))).toEqual(a);
    expect(() => selectComparisons(target, comparator, allValid(5), "all", 2)).toThrow(/must be null/);
  });
});

/** A comparator answering with fixed texts; candidate 1 of every item is invalid. */
class FixedComparator implements Comparator {
  readonly description = "fixed";
  rounds: number[] = [];
  async beginRound(round: number) {
    this.rounds.push(round);
  }
  async sample(items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    return prompts.map((agents) => ({
      texts: agents.map((_, a) => Array.from({ length: n }, (_, j) => (j === 1 ? "" : `${"e".repeat(j + 1)} agent${a}`))),
      valid: Array.from({ length: n }, (_, j) => j !== 1),
      stopped: agents.map(() => Array.from({ length: n }, (_, j) => j === 0)),
    }));
  }
  async endRound() {}
  dispose() {}
}

describe("collecting comparisons", () => {
  it("scores both sides, records raw and processed rewards, and tokens that re-create the pair", async () => {
    const p = await loadPretrained(TINY_LLAMA);
    const policy = { model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
    const countE = (c: string[][]) => c[0]!.map((x, j) => (x + c[1]![j]!).split("e").length - 1);
    const r = await collectComparisons({
      items: [{ prompt: "The cat" }, { prompt: "We drink" }],
      formatters: resolveFormatters(undefined, 2),
      sampler: new PolicySampler([policy, policy], { maxNewTokens: 5, temperature: 1, topP: 1, topK: null, maxBatchRows: 8 }, RngStream.fromSeed(0, "policy")),
      agents: [policy, policy],
      comparator: new FixedComparator(),
      rewardFunc: countE,
      rewardProcessor: (x) => x / 10,
      numCandidates: 3,
      comparatorNumCandidates: 3,
      pairSelection: "all",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
      rewardConcurrency: 2,
      itemsPerBatch: 1,
    });
    expect(r.invalid).toEqual({ target: 0, comparator: 2 });
    expect(r.rawRewards.target).toHaveLength(6);
    expect(r.rawRewards.comparator).toEqual([4, 8, 4, 8]); // "e agent0" + "e agent1" has 4 e's; "eee agent0" + "eee agent1" 8
    expect(r.pairs.length).toBe(r.wins.target + r.wins.comparator);
    for (const pair of r.pairs) {
      const rec = pair.record;
      const j = rec.comparator_raw_reward === 4 ? 0 : 2;
      expect(j === 0 || j === 2).toBe(true); // candidate 1 is invalid on the comparator side
      expect(rec.raw_rewards).toEqual(
        rec.winner_reward * 10 === rec.target_raw_reward
          ? [rec.target_raw_reward, rec.comparator_raw_reward]
          : [rec.comparator_raw_reward, rec.target_raw_reward],
      );
      expect(rec.winner_reward).toBeGreaterThan(rec.loser_reward);
      // the stored ids re-create the trained tokens exactly, through the same path replay uses
      expect(pairTokensFromRecord(rec, [policy, policy])).toEqual(pair.tokens);
      // a comparator candidate that stopped gets the agent's EOS appended
      const compSideIsWinner = rec.winner_completions[0]!.includes("agent0");
      const compIds = compSideIsWinner ? pair.tokens[0]!.winnerIds : pair.tokens[0]!.loserIds;
      expect(compIds[compIds.length - 1] === 2).toBe(j === 0);
    }
    p.model.dispose();
  });

  it("a target candidate's ids are the ones sampled, not its text encoded again", async () => {
    const p = await loadPretrained(TINY_LLAMA);
    const policy = { model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
    const inner = new PolicySampler(
      [policy, policy],
      { maxNewTokens: 6, temperature: 1.5, topP: 1, topK: null, maxBatchRows: 8 },
      RngStream.fromSeed(3, "policy"),
    );
    const sampled: AgentSamples[][][] = [];
    const sampler: CandidateSampler = {
      async sample(prompts, n, indices) {
        const s = await inner.sample(prompts, n, indices);
        sampled.push(s);
        return s;
      },
    };
    const r = await collectComparisons({
      items: [{ prompt: "The cat" }, { prompt: "We drink" }],
      formatters: resolveFormatters(undefined, 2),
      sampler,
      agents: [policy, policy],
      comparator: new FixedComparator(),
      // The target side always wins, so every pair carries target tokens.
      rewardFunc: (c) => c[0]!.map((x) => (x.includes("agent0") ? 0 : 1)),
      numCandidates: 3,
      comparatorNumCandidates: 3,
      pairSelection: "all",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
      rewardConcurrency: 2,
      itemsPerBatch: 2,
    });
    expect(r.pairs).toHaveLength(4); // comparator candidate 1 of each item is invalid
    const agentsOf = sampled[0]!;
    let differ = 0;
    for (const pair of r.pairs) {
      const k = pair.record.prompts[0] === "The cat" ? 0 : 1;
      for (let a = 0; a < 2; a++) {
        const j = agentsOf[k]![a]!.texts.indexOf(pair.record.winner_completions[a]!);
        expect(pair.tokens[a]!.winnerIds).toEqual(agentsOf[k]![a]!.tokens[j]);
        if (p.tokenizer!.encode(pair.record.winner_completions[a]!, { addSpecialTokens: false }).join() !== pair.tokens[a]!.winnerIds.join()) differ++;
      }
    }
    // Some sampled ids are not their text's own encoding (an EOS that ended them, or a split the
    // tokenizer would not choose), so re-encoding the text could not pass the check above.
    expect(differ).toBeGreaterThan(0);
    p.model.dispose();
  });

  it("pairTokensFromRecord encodes records without ids and rejects ids that do not match the text", async () => {
    const p = await loadPretrained(TINY_LLAMA);
    const agent = { tokenizer: p.tokenizer!, eosTokenIds: [2] };
    const rec = {
      prompts: ["The cat"],
      winner_completions: [" sat"],
      loser_completions: [" ran"],
      winner_reward: 1,
      loser_reward: 0,
      candidate_reward_mean: 0.5,
    };
    const [t] = pairTokensFromRecord(rec, [agent]);
    expect(t!.promptIds).toEqual(p.tokenizer!.encode("The cat"));
    expect(p.tokenizer!.decode(t!.winnerIds)).toBe(" sat");
    expect(() => pairTokensFromRecord({ ...rec, winner_token_ids: [[5, 6]] }, [agent], "pair 3 of iteration_0002.json")).toThrow(
      /pair 3 of iteration_0002\.json: winner_token_ids\[0\] does not decode/,
    );
    expect(() => pairTokensFromRecord(rec, [agent, agent])).toThrow(/1 agent entries but the run has 2 agents/);
    p.model.dispose();
  });
});

import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { collectPreferencePairs, PairRecordSchema, PolicySampler, resolveFormatters, type AgentSamples, type CandidateSampler } from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

/** Answers with fixed texts: candidate j of agent a to prompt p is `${p}:${a}:${j}`. */
class ScriptedSampler implements CandidateSampler {
  calls: number[] = [];
  sample(prompts: readonly (readonly string[])[], n: number): AgentSamples[][] {
    this.calls.push(prompts.length);
    return prompts.map((agents) =>
      agents.map((p, a) => ({
        promptIds: [a],
        tokens: Array.from({ length: n }, (_, j) => [a, j]),
        texts: Array.from({ length: n }, (_, j) => `${p}:${a}:${j}`),
      })),
    );
  }
}

const items = [
  { id: "a", prompt: "p0", score: [1, 3, 2] },
  { id: "b", prompt: "p1", score: [5, 5, 5] },
  { id: "c", prompt: "p2", score: [0, 1, 0] },
];
const base = {
  items,
  formatters: resolveFormatters(undefined, 2),
  rewardFunc: (c: string[][], ctx: { item: Record<string, unknown> }) => (ctx.item["score"] as number[]).slice(0, c[0]!.length),
  numCandidates: 3,
  pairSelection: "reward_gap" as const,
  pairsPerSample: 2,
  selectionRng: RngStream.fromSeed(0, "sel"),
  rewardConcurrency: 2,
  itemsPerBatch: 2,
};

describe("collecting pairs", () => {
  it("joins candidates by index, drops tied items, keeps the top gaps (hand-computed)", async () => {
    const sampler = new ScriptedSampler();
    const r = await collectPreferencePairs({ ...base, sampler });
    expect(sampler.calls).toEqual([2, 1]);
    // item a: rewards [1,3,2] → gaps (1,0)=2, (1,2)=1, (2,0)=1 → top 2: (1,0), (1,2)
    // item b: all tied → nothing; item c: [0,1,0] → (1,0), (1,2)
    expect(r.pairs.map((p) => [p.itemIndex, p.record.winner_completions[0], p.record.loser_completions[1]])).toEqual([
      [0, "p0:0:1", "p0:1:0"],
      [0, "p0:0:1", "p0:1:2"],
      [2, "p2:0:1", "p2:1:0"],
      [2, "p2:0:1", "p2:1:2"],
    ]);
    expect(r.itemsWithPairs).toBe(2);
    expect(r.pairs[0]!.record).toEqual({
      prompts: ["p0", "p0"],
      winner_completions: ["p0:0:1", "p0:1:1"],
      loser_completions: ["p0:0:0", "p0:1:0"],
      winner_reward: 3,
      loser_reward: 1,
      candidate_reward_mean: 2,
      prompt_token_ids: [[0], [1]],
      winner_token_ids: [
        [0, 1],
        [1, 1],
      ],
      loser_token_ids: [
        [0, 0],
        [1, 0],
      ],
    });
    expect(r.pairs[0]!.tokens[1]).toEqual({ promptIds: [1], winnerIds: [1, 1], loserIds: [1, 0] });
    expect(r.candidateRewards).toEqual([
      [1, 3, 2],
      [5, 5, 5],
      [0, 1, 0],
    ]);
  });

  it("never pairs invalid candidates, counts them, and averages rewards over the valid ones", async () => {
    // item a: rewards [1, 3, 2] with candidate 1 invalid → only (2, 0) remains
    const r = await collectPreferencePairs({ ...base, items: [items[0]!], sampler: new ScriptedSampler(), isValid: (texts) => !texts[0]!.endsWith(":1") });
    expect(r.invalidCandidates).toBe(1);
    expect(r.pairs.map((p) => [p.record.winner_completions[0], p.record.loser_completions[0]])).toEqual([["p0:0:2", "p0:0:0"]]);
    expect(r.pairs[0]!.record.candidate_reward_mean).toBe(1.5);
    expect(r.candidateRewards).toEqual([[1, 2]]);
  });

  it("does not depend on the order async oracle calls finish in", async () => {
    const slowFirst = async (c: string[][], ctx: { item: Record<string, unknown>; itemIndex: number }) => {
      await new Promise((r) => setTimeout(r, ctx.itemIndex === 0 ? 30 : 1));
      return (ctx.item["score"] as number[]).slice(0, c[0]!.length);
    };
    const a = await collectPreferencePairs({
      ...base,
      sampler: new ScriptedSampler(),
      pairSelection: "random",
      selectionRng: RngStream.fromSeed(3, "sel"),
      rewardFunc: slowFirst,
    });
    const b = await collectPreferencePairs({
      ...base,
      sampler: new ScriptedSampler(),
      pairSelection: "random",
      selectionRng: RngStream.fromSeed(3, "sel"),
      rewardConcurrency: 1,
    });
    expect(a.pairs.map((p) => p.record)).toEqual(b.pairs.map((p) => p.record));
  });

  it("keeps oracle calls within the concurrency bound", async () => {
    let inFlight = 0;
    let peak = 0;
    const rewardFunc = async (c: string[][]) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return c[0]!.map((_, j) => j);
    };
    const many = Array.from({ length: 12 }, (_, i) => ({ prompt: `p${i}` }));
    await collectPreferencePairs({ ...base, items: many, itemsPerBatch: 12, rewardConcurrency: 3, sampler: new ScriptedSampler(), rewardFunc });
    expect(peak).toBe(3);
  });

  it("samples real candidates with a policy and records what was generated", async () => {
    const p = await loadPretrained(TINY_LLAMA);
    const policy = { model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
    const sampler = new PolicySampler(
      [policy, policy],
      { maxNewTokens: 6, temperature: 1.2, topP: 1, topK: null, maxBatchRows: 4 },
      RngStream.fromSeed(0, "policy"),
    );
    const r = await collectPreferencePairs({
      ...base,
      items: [{ prompt: "The cat" }, { prompt: "We drink" }],
      sampler,
      numCandidates: 4,
      pairsPerSample: 3,
      rewardFunc: (c) => c[0]!.map((s, j) => s.length + c[1]![j]!.length),
    });
    expect(r.pairs.length).toBeGreaterThan(0);
    for (const pair of r.pairs) {
      expect(PairRecordSchema.safeParse(pair.record).success).toBe(true);
      pair.tokens.forEach((t, a) => {
        expect(p.tokenizer!.decode(t.winnerIds)).toBe(pair.record.winner_completions[a]);
        expect(t.promptIds).toEqual(p.tokenizer!.encode(pair.record.prompts[a]!));
      });
      expect(pair.record.winner_reward).toBeGreaterThan(pair.record.loser_reward);
    }
    p.model.dispose();
  });
});

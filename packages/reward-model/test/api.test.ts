// Rollout scoring, the truncation side, and the errors bad input gets.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { assertNoTensorLeak, RngStream, tf } from "@pbrl/core-tensor";
import type { PairRecord } from "@pbrl/preference-data";
import { JointRewardModel, NonFiniteRewardError, RewardModelError, type RewardTrainOptions } from "../src/index.js";
import { markerPairs, TINY_LLAMA } from "./helpers.js";

let rm: JointRewardModel;
beforeEach(async () => {
  rm = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(21, "head") });
});
afterEach(() => rm.dispose());

const pairs = markerPairs(RngStream.fromSeed(22, "pairs"), 4);
const trainOpts = (): RewardTrainOptions => ({ learningRate: 0.01, epochs: 1, batchSize: 2, rng: RngStream.fromSeed(23, "shuffle") });

describe("scoreRollouts: completions[agent][g] joined by index", () => {
  it("scores joint response g from every agent's g-th sample", () => {
    const prompts = ["Write a greeting.", "Add a farewell."];
    const completions = [
      ["Hello", "Hi there", "Good morning to you"],
      ["Bye", "See you", "Farewell, friend"],
    ];
    const got = rm.scoreRollouts(prompts, completions, { batchSize: 2 });
    const want = rm.scores(
      [0, 1, 2].map((g) => ({ prompts, completions: [completions[0]![g]!, completions[1]![g]!] })),
      { batchSize: 1 },
    );
    expect(got).toHaveLength(3);
    expect(Math.max(...got.map((s, i) => Math.abs(s - want[i]!)))).toBeLessThanOrEqual(1e-5);
    // Samples are joined by index, not crossed: swapping one agent's samples changes the scores.
    const crossed = rm.scoreRollouts(prompts, [completions[0]!, [...completions[1]!].reverse()]);
    expect(Math.abs(crossed[0]! - got[0]!)).toBeGreaterThan(1e-5);
    expect(rm.scoreRollouts(prompts, [[], []])).toEqual([]);
  });

  it("rejects agent-count and sample-count mismatches, naming the list", () => {
    expect(() => rm.scoreRollouts(["a", "b"], [["x"]])).toThrow(/completions has 1 agent\(s\) but prompts has 2/);
    expect(() => rm.scoreRollouts([], [])).toThrow(/at least one agent/);
    expect(() => rm.scoreRollouts(["a", "b"], [["x", "y"], ["z"]])).toThrow(/completions\[1\] has 1 sample\(s\) but completions\[0\] has 2/);
  });
});

describe("truncation (reward_max_length) keeps the end of the joint text", () => {
  // CoMLRL truncates on the tokenizer's side (right for these tokenizers), which can cut off the
  // responses at the end of the text (reference §12.11); pbrl keeps the end, like
  // transformers' truncation_side="left" (the parity test checks the very ids).
  const prompts = ["Describe the tree.", "Review the road."];
  const longTail = "cat dog tree river blue green quick slow house road sun rain bread stone";
  const differAtStart: PairRecord = {
    prompts,
    winner_completions: ["quick", longTail],
    loser_completions: ["slow", longTail],
    winner_reward: 1,
    loser_reward: 0,
    candidate_reward_mean: 0.5,
  };
  const differAtEnd: PairRecord = {
    prompts,
    winner_completions: ["quick", `${longTail} excellent`],
    loser_completions: ["quick", `${longTail} bird`],
    winner_reward: 1,
    loser_reward: 0,
    candidate_reward_mean: 0.5,
  };
  const limit = 16;

  it("a difference early in the text is cut off; one at the end is kept", () => {
    const w = rm.encode({ prompts, completions: differAtEnd.winner_completions }, limit);
    expect(w).toHaveLength(limit);
    expect(w[0]).toBe(1); // BOS stays
    expect(rm.tokenizer.decode(w, { skipSpecialTokens: true })).toMatch(/stone excellent$/);

    const start = rm.evaluate([differAtStart], { maxLength: limit });
    expect(start["reward/margin"]).toBe(0); // both sides truncate to the same tokens
    expect(rm.evaluate([differAtStart])["reward/margin"]).not.toBe(0); // untruncated they differ
    expect(rm.evaluate([differAtEnd], { maxLength: limit })["reward/margin"]).not.toBe(0);
  });

  it("the model's maxLength applies to scores, evaluate and train unless a call overrides it", async () => {
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(21, "head"), maxLength: limit });
    try {
      const x = { prompts, completions: differAtStart.winner_completions };
      expect(m.encode(x)).toHaveLength(limit);
      expect(m.scores([x])).toEqual(m.scoreIds([m.encode(x)]));
      expect(m.scores([x], { maxLength: 200 })).toEqual(m.scoreIds([m.encode(x, 200)]));
      expect(m.evaluate([differAtStart])["reward/margin"]).toBe(0);
      // Truncated to equal texts, the pair carries no signal: every step sees s_w − s_l = 0 (to the
      // last bit on wasm and cpu; a BLAS may round two equal rows of one product apart by a few
      // ulps of the scores: 1.07e-6 with MKL's AVX2 kernels on a Zen 3).
      const r = await m.train([differAtStart], { ...trainOpts(), epochs: 2, batchSize: 1 });
      for (const e of r.epochs) expect(Math.abs(e["reward/margin"]!)).toBeLessThan(1e-5);
      // −log σ(m) = ln 2 − m/2 + O(m²): the loss sits within half the margin's rounding of ln 2.
      expect(Math.abs(r.epochs[0]!["reward/loss"]! - Math.LN2)).toBeLessThan(1e-5);
    } finally {
      m.dispose();
    }
  });
});

describe("bad input gets a clear error naming what to fix", () => {
  const pair = pairs[0]!;

  it("empty pairs", async () => {
    await expect(rm.train([], trainOpts())).rejects.toThrow(/pairs is empty/);
    expect(() => rm.evaluate([])).toThrow(/pairs is empty/);
  });

  it("training settings, with the reward_* config field they come from", async () => {
    await expect(rm.train(pairs, { ...trainOpts(), learningRate: 0 })).rejects.toThrow(
      /learningRate \(reward_learning_rate\) must be a finite number > 0, got 0/,
    );
    await expect(rm.train(pairs, { ...trainOpts(), learningRate: Number.NaN })).rejects.toThrow(/reward_learning_rate/);
    await expect(rm.train(pairs, { ...trainOpts(), epochs: 0 })).rejects.toThrow(/epochs \(reward_num_train_epochs\) must be an integer ≥ 1, got 0/);
    await expect(rm.train(pairs, { ...trainOpts(), batchSize: 1.5 })).rejects.toThrow(/batchSize \(reward_train_batch_size\) must be an integer ≥ 1, got 1.5/);
    await expect(rm.train(pairs, { ...trainOpts(), maxLength: 0 })).rejects.toThrow(/maxLength must be an integer ≥ 1, got 0/);
    expect(() => rm.scores([], { batchSize: 0 })).toThrow(/batchSize must be an integer ≥ 1, got 0/);
    expect(() => rm.scoreIds([[1, 2]], { batchSize: 0 })).toThrow(/batchSize must be an integer ≥ 1, got 0/);
  });

  it("mismatched agent counts in a pair, across pairs, and in a joint response", async () => {
    const short: PairRecord = { ...pair, winner_completions: [pair.winner_completions[0]!] };
    await expect(rm.train([pair, short], trainOpts())).rejects.toThrow(/pairs\[1\]: 2 prompts but 1 winner_completions and 2 loser_completions; one per agent/);
    expect(() => rm.evaluate([pair, { ...pair, loser_completions: [...pair.loser_completions, "extra"] }])).toThrow(
      /pairs\[1\]: 2 prompts but 2 winner_completions and 3 loser_completions/,
    );
    const three: PairRecord = {
      ...pair,
      prompts: [...pair.prompts, "p3"],
      winner_completions: [...pair.winner_completions, "w3"],
      loser_completions: [...pair.loser_completions, "l3"],
    };
    await expect(rm.train([pair, three], trainOpts())).rejects.toThrow(/pairs\[1\] has 3 agents but pairs\[0\] has 2/);
    await expect(rm.train([{ ...pair, prompts: [], winner_completions: [], loser_completions: [] }], trainOpts())).rejects.toThrow(
      /pairs\[0\]\.prompts is empty/,
    );
    expect(() =>
      rm.scores([
        { prompts: ["a", "b"], completions: ["x", "y"] },
        { prompts: ["a", "b"], completions: ["x"] },
      ]),
    ).toThrow(/batch\[1\]: 2 prompts but 1 completions; one prompt and one completion per agent/);
    expect(rm.scores([])).toEqual([]);
  });

  it("create needs exactly one of rng and headFile; a disposed model refuses work", async () => {
    await expect(JointRewardModel.create({ source: TINY_LLAMA })).rejects.toThrow(/exactly one of `rng` \(random head\) and `headFile` \(saved head\)/);
    await expect(JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(0), headFile: "x" })).rejects.toThrow(RewardModelError);
    await expect(JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(0), maxLength: -1 })).rejects.toThrow(
      /maxLength must be an integer ≥ 1, got -1/,
    );
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(0) });
    m.dispose();
    expect(() => m.scores([{ prompts: ["a"], completions: ["b"] }])).toThrow(/has been disposed/);
  });

  it("a non-finite reward or loss stops with NonFiniteRewardError, naming the row or the batch, and leaks nothing", async () => {
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(24, "head") });
    try {
      m.scores([{ prompts: ["a"], completions: ["b"] }]); // warm-up
      const bias = m.head.params.get("reward_head.bias")!;
      bias.assign(tf.tensor1d([Number.NaN]));
      const x = { prompts: ["a"], completions: ["b"] };
      await assertNoTensorLeak("non-finite scores", () => {
        expect(() => m.scores([x, x, x], { batchSize: 2 })).toThrow(NonFiniteRewardError);
      });
      expect(() => m.scores([x])).toThrow(/non-finite score \(NaN\) for row 0/);
      await assertNoTensorLeak("non-finite train", async () => {
        await expect(m.train(pairs, trainOpts())).rejects.toThrow(/non-finite Bradley–Terry loss \(NaN\) in epoch 1, batch 1/);
      });
      expect(() => m.evaluate(pairs)).toThrow(NonFiniteRewardError);
    } finally {
      m.dispose();
    }
  });
});

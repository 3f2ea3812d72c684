import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, tf } from "@pbrl/core-tensor";
import { scoreCompletions } from "@pbrl/models";
import {
  agentAdvantages,
  collectRollouts,
  groupAdvantages,
  NonFiniteError,
  policyGradientUpdate,
  policyRows,
  sequenceLogProbs,
  type AdvantageMode,
  type Rollout,
} from "../src/index.js";
import { copyAgents, disposeAgents, formatters, ITEMS, makeAgents, maxWeightDiff, sampler, type TestAgent } from "./helpers.js";

const STOPS = [2, 327, 346, 137];
// Joint reward by generation index (and item): the groups have spread and different shapes.
const SHAPES = [
  [1, 2, 6, 3],
  [0, 0.5, -1, 2],
  [4, 4, 5, 1],
];

async function rollouts(agents: TestAgent[], seed = 11): Promise<Rollout[]> {
  return collectRollouts({
    items: ITEMS,
    formatters: formatters(agents.length),
    sampler: sampler(agents, seed),
    numGenerations: 4,
    reward: (_c, ctx) => SHAPES[ctx.itemIndex]!,
  });
}

describe("policyGradientUpdate", () => {
  let base: TestAgent[];
  let batch: Rollout[];
  beforeAll(async () => {
    // The pad id equals a stop id (as when a tokenizer pads with EOS): padding must still be found
    // by length, so a generated 327 is scored and the 327s padding a row are not.
    base = await makeAgents(2, { stops: STOPS, padTokenId: 327 });
    batch = await rollouts(base);
  });
  afterAll(() => disposeAgents(base));

  it("scores every generated token, EOS included, padding excluded (batched log-probs = each sequence alone)", () => {
    const rows = policyRows(batch, 0);
    expect(rows).toHaveLength(12);
    expect(rows[5]).toEqual({ promptIds: batch[1]!.promptIds[0], completionIds: batch[1]!.tokens[0]![1] });
    const lengths = rows.map((r) => r.completionIds.length);
    const maxLen = Math.max(...lengths);
    // Some rows stopped early on 327 (= the pad id) and get padded with 327 in the batch.
    expect(rows.some((r) => r.completionIds.at(-1) === 327 && r.completionIds.length < maxLen)).toBe(true);
    expect(new Set(rows.map((r) => r.promptIds.length + r.completionIds.length)).size).toBeGreaterThan(1);

    const batched = tf.tidy(() => Array.from(sequenceLogProbs(base[0]!.model, rows, 327).dataSync()));
    const alone = scoreCompletions(base[0]!.model, rows, { padTokenId: 327, batchSize: 1 });
    alone.tokenLogProbs.forEach((t, i) => expect(t).toHaveLength(lengths[i]!)); // every generated token, the stop id too
    batched.forEach((s, i) => expect(s).toBeCloseTo(alone.sums[i]!, 4));
    // The stop token's log-prob is really in the sum: leaving it out would change it.
    rows.forEach((r, i) => {
      if (r.completionIds.length > 0) expect(Math.abs(alone.tokenLogProbs[i]!.at(-1)!)).toBeGreaterThan(1e-3);
    });
  });

  it("reports the pre-step loss = mean over rows of −log π · A, and the batch metrics", () => {
    const agents = copyAgents(base);
    const lp = agents.map((a, i) => scoreCompletions(a.model, policyRows(batch, i), { padTokenId: 327 }).sums);
    const m = policyGradientUpdate(agents, batch, { mode: "max", normalize: true, where: "epoch 1, batch 1" });
    expect(Object.keys(m).sort()).toEqual([
      "agent_0/advantage_mean",
      "agent_0/logprob_mean",
      "agent_0/loss",
      "agent_1/advantage_mean",
      "agent_1/logprob_mean",
      "agent_1/loss",
      "rl/advantage_std",
      "turn_1/expected_return",
      "turn_1/reward_mean",
    ]);
    const adv = SHAPES.flatMap((r) => groupAdvantages(r, "max", true));
    for (let i = 0; i < 2; i++) {
      const want = lp[i]!.reduce((s, x, r) => s - x * adv[r]!, 0) / 12;
      expect(m[`agent_${i}/loss`]).toBeCloseTo(want, 3);
      expect(m[`agent_${i}/logprob_mean`]).toBeCloseTo(lp[i]!.reduce((a, b) => a + b, 0) / 12, 3);
      expect(m[`agent_${i}/advantage_mean`]).toBeCloseTo(adv.reduce((a, b) => a + b, 0) / 12, 10);
    }
    const rewards = SHAPES.flat();
    const meanR = rewards.reduce((a, b) => a + b, 0) / 12;
    expect(m["turn_1/reward_mean"]).toBeCloseTo(meanR, 10);
    expect(m["turn_1/expected_return"]).toBeCloseTo(meanR, 10);
    const meanA = adv.reduce((a, b) => a + b, 0) / 12;
    expect(m["rl/advantage_std"]).toBeCloseTo(Math.sqrt(adv.reduce((s, a) => s + (a - meanA) ** 2, 0) / 12), 10);
    disposeAgents(agents);
  });

  it("the four modes give four different updates on identical rollouts, with and without normalisation", () => {
    // A huge AdamW eps makes the first step linear in the gradient (lr·g/eps). With the usual eps
    // the first Adam step is ≈ lr·sign(g), which hides a pure rescaling (rloo = G/(G−1)·mean).
    const modes: AdvantageMode[] = ["mean", "raw", "max", "rloo"];
    for (const normalize of [false, true]) {
      const trained = modes.map((mode) => {
        const agents = copyAgents(base, { lr: 1, eps: 1e3 });
        policyGradientUpdate(agents, batch, { mode, normalize, where: `mode ${mode}` });
        return agents;
      });
      const moved = maxWeightDiff(trained[0]![0]!.model, base[0]!.model);
      expect(moved).toBeGreaterThan(1e-6);
      for (let a = 0; a < 4; a++) {
        for (let b = a + 1; b < 4; b++) {
          for (let i = 0; i < 2; i++)
            expect(
              maxWeightDiff(trained[a]![i]!.model, trained[b]![i]!.model),
              `${modes[a]} vs ${modes[b]}, agent ${i}, normalize ${normalize}`,
            ).toBeGreaterThan(0.05 * moved);
        }
      }
      trained.forEach(disposeAgents);
    }
  });

  it("subtracts the penalties from the returns before the advantage (same update as pre-shaped returns)", () => {
    const penalties = [batch.map((_, k) => [0.5, 0, 1, 0.25].map((p) => p * (k + 1))), batch.map(() => [0, 0, 0, 0])];
    // Hand check of agent 0, item 0: R = [1, 2, 6, 3], p = [0.5, 0, 1, 0.25] → R' = [0.5, 2, 5, 2.75], mean 2.5625.
    const adv = agentAdvantages(batch, 0, "mean", false, penalties);
    [-2.0625, -0.5625, 2.4375, 0.1875].forEach((x, g) => expect(adv[0]![g]!).toBeCloseTo(x, 12));
    expect(agentAdvantages(batch, 1, "mean", false, penalties)[0]).toEqual(groupAdvantages(SHAPES[0]!, "mean", false));

    const shaped = copyAgents(base, { lr: 1, eps: 1e3 });
    const preShaped = copyAgents(base, { lr: 1, eps: 1e3 });
    const unshaped = copyAgents(base, { lr: 1, eps: 1e3 });
    const m = policyGradientUpdate(shaped, batch, { mode: "mean", normalize: true, penalties, where: "shaped" });
    expect(m["agent_0/penalty_mean"]).toBeCloseTo(((1.75 / 4) * (1 + 2 + 3)) / 3, 10);
    expect(m["agent_1/penalty_mean"]).toBe(0);
    // Agent 0 trained on returns R − p directly; agent 1's penalties are zero.
    const minus = batch.map((r, k) => ({ ...r, returns: r.returns.map((x, g) => x - penalties[0]![k]![g]!) }));
    policyGradientUpdate(preShaped, minus, { mode: "mean", normalize: true, where: "pre-shaped" });
    policyGradientUpdate(unshaped, batch, { mode: "mean", normalize: true, where: "unshaped" });
    expect(maxWeightDiff(shaped[0]!.model, preShaped[0]!.model)).toBe(0);
    expect(maxWeightDiff(shaped[1]!.model, unshaped[1]!.model)).toBe(0);
    expect(maxWeightDiff(shaped[0]!.model, unshaped[0]!.model)).toBeGreaterThan(1e-6);
    [shaped, preShaped, unshaped].forEach(disposeAgents);
  });

  it("splitting the rows over several forwards gives the same update (one optimizer step)", () => {
    const whole = copyAgents(base, { lr: 1, eps: 1e3 });
    const split = copyAgents(base, { lr: 1, eps: 1e3 });
    const a = policyGradientUpdate(whole, batch, { mode: "raw", normalize: false, where: "whole" });
    const b = policyGradientUpdate(split, batch, { mode: "raw", normalize: false, where: "split", maxRowsPerForward: 5 });
    for (const k of Object.keys(a)) expect(b[k]).toBeCloseTo(a[k]!, 3);
    const moved = maxWeightDiff(whole[0]!.model, base[0]!.model);
    for (let i = 0; i < 2; i++) expect(maxWeightDiff(whole[i]!.model, split[i]!.model)).toBeLessThan(1e-3 * moved);
    [whole, split].forEach(disposeAgents);
  });

  it("stops with an error naming the agent and location on a non-finite log-prob, loss or penalty", () => {
    const agents = copyAgents(base);
    const w = agents[1]!.model.params.get("model.norm.weight")!;
    w.assign(tf.fill(w.shape, NaN));
    expect(() => policyGradientUpdate(agents, batch, { mode: "mean", normalize: true, where: "round 2, epoch 1, batch 3" })).toThrow(NonFiniteError);
    expect(() => policyGradientUpdate(agents, batch, { mode: "mean", normalize: true, where: "round 2, epoch 1, batch 3" })).toThrow(
      /agent 1 .*non-finite.* in round 2, epoch 1, batch 3/,
    );
    disposeAgents(agents);

    const fine = copyAgents(base);
    // Finite log-probs and returns whose product overflows float32: a non-finite loss.
    const huge = batch.map((r) => ({ ...r, returns: [3e38, 3e38, 3e38, 3e38] }));
    expect(() => policyGradientUpdate(fine, huge, { mode: "raw", normalize: false, where: "epoch 2, batch 9" })).toThrow(
      /agent 0 has a non-finite loss \(-?Infinity\) in epoch 2, batch 9/,
    );
    const nanPenalty = [batch.map(() => [0, 0, 0, 0]), batch.map((_, k) => (k === 2 ? [0, Infinity, 0, 0] : [0, 0, 0, 0]))];
    expect(() => policyGradientUpdate(fine, batch, { mode: "mean", normalize: false, penalties: nanPenalty, where: "epoch 4, batch 1" })).toThrow(
      /agent 1 .*non-finite penalty .*generation 1 of item 2 in epoch 4, batch 1/,
    );
    const nanReturn = batch.map((r, k) => (k === 1 ? { ...r, returns: [1, 2, NaN, 3] } : r));
    expect(() => policyGradientUpdate(fine, nanReturn, { mode: "mean", normalize: false, where: "epoch 1, batch 2" })).toThrow(
      /generation 2 of item 1 is NaN in epoch 1, batch 2/,
    );
    expect(() => policyGradientUpdate(fine, [], { mode: "mean", normalize: false, where: "epoch 1, batch 2" })).toThrow(/no rollouts/);
    expect(() => policyGradientUpdate(fine.slice(0, 1), batch, { mode: "mean", normalize: false, where: "x" })).toThrow(
      /samples for 2 agent\(s\); 1 are being trained/,
    );
    disposeAgents(fine);
  });

  it("leaves no tensors behind across a warmed-up update", () => {
    const agents = copyAgents(base);
    policyGradientUpdate(agents, batch, { mode: "mean", normalize: true, where: "warm-up" });
    const n = liveTensorCount();
    policyGradientUpdate(agents, batch, { mode: "rloo", normalize: true, where: "batch 1" });
    policyGradientUpdate(agents, batch, { mode: "raw", normalize: false, where: "batch 2", maxRowsPerForward: 5 });
    expect(liveTensorCount()).toBe(n);
    disposeAgents(agents);
  });
});

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import type { CausalLM, ScoringItem } from "@pbrl/models";
import {
  collectRollouts,
  frozenReference,
  policyRows,
  referenceKlPenalties,
  referenceKls,
  referenceKlShaping,
  runRlEpochs,
  sequenceKl,
  tokenKl,
  type Rollout,
} from "../src/index.js";
import { copyAgents, disposeAgents, formatters, ITEMS, makeAgents, maxWeightDiff, sampler, type TestAgent } from "./helpers.js";

const STOPS = [2, 327, 346, 137];

/** Per-token log π of each completion token, from a full forward of the row alone (no batching, full log-softmax). */
function directTokenLogProbs(model: CausalLM, row: ScoringItem): number[] {
  return tf.tidy(() => {
    const ids = Int32Array.from([...row.promptIds, ...row.completionIds]);
    const logp = tf.logSoftmax(model.forward({ ids, batch: 1, length: ids.length })).arraySync() as number[][];
    return row.completionIds.map((tok, k) => logp[row.promptIds.length - 1 + k]![tok]!);
  });
}

/** Mean over completion positions of the exact KL(π ‖ π_ref) of the next-token distributions. */
function exactKl(policy: CausalLM, ref: CausalLM, rows: readonly ScoringItem[]): number {
  let total = 0;
  let count = 0;
  for (const row of rows) {
    if (row.completionIds.length === 0) continue;
    const ids = Int32Array.from([...row.promptIds, ...row.completionIds]);
    total += tf.tidy(() => {
      const at = tf.slice(tf.range(0, ids.length, 1, "int32"), [row.promptIds.length - 1], [row.completionIds.length]);
      const lp = tf.gather(tf.logSoftmax(policy.forward({ ids, batch: 1, length: ids.length })), at);
      const lq = tf.gather(tf.logSoftmax(ref.forward({ ids, batch: 1, length: ids.length })), at);
      return tf.sum(tf.mul(tf.exp(lp), tf.sub(lp, lq))).dataSync()[0]!;
    });
    count += row.completionIds.length;
  }
  return total / count;
}

function perturb(model: CausalLM, scale: number, seed: number): void {
  let s = seed;
  for (const v of model.params.values()) tf.tidy(() => v.assign(tf.add(v, tf.mul(tf.randomNormal(v.shape, 0, 1, "float32", s++), scale))));
}

describe("reference KL", () => {
  let base: TestAgent[];
  let batch: Rollout[];
  beforeAll(async () => {
    base = await makeAgents(2, { stops: STOPS, padTokenId: 327 });
    batch = await collectRollouts({ items: ITEMS, formatters: formatters(2), sampler: sampler(base, 5), numGenerations: 3, reward: () => [1, 2, 3] });
  });
  afterAll(() => disposeAgents(base));

  it("k1 and k3 per token, hand-computed", () => {
    // log π = [−1, −2], log π_ref = [−1.5, −1]: k1 = log π − log π_ref = [0.5, −1];
    // r = log π_ref − log π = [−0.5, 1]: k3 = e^r − 1 − r = [e^−0.5 − 0.5, e − 2].
    expect(tokenKl([-1, -2], [-1.5, -1], "k1")).toEqual([0.5, -1]);
    expect(sequenceKl([-1, -2], [-1.5, -1])).toBe(-0.5);
    const k3 = tokenKl([-1, -2], [-1.5, -1], "k3");
    expect(k3[0]).toBeCloseTo(Math.exp(-0.5) - 0.5, 14);
    expect(k3[1]).toBeCloseTo(Math.E - 2, 14);
    expect(sequenceKl([-1, -2], [-1.5, -1], "k3")).toBeCloseTo(Math.exp(-0.5) - 0.5 + Math.E - 2, 14);
    expect(sequenceKl([], [])).toBe(0);
    expect(tokenKl([-1e-9], [-1e-9 - 1e-12], "k3")[0]).toBeGreaterThanOrEqual(0);
    expect(() => tokenKl([-1], [])).toThrow(/1 policy log-probs but 0 reference/);
  });

  it("matches a direct per-row computation on the tiny model (EOS scored, padding excluded), for k1 and k3", () => {
    const policies = base.map((a) => ({ model: frozenReference(a.model), padTokenId: a.padTokenId }));
    policies.forEach((p, i) => perturb(p.model, 0.01, 100 * (i + 1)));
    const refs = base.map((a) => a.model);
    for (const estimator of ["k1", "k3"] as const) {
      const kls = referenceKls(policies, refs, batch, { estimator, batchSize: 5 });
      expect(kls.map((a) => a.map((r) => r.length))).toEqual([
        [3, 3, 3],
        [3, 3, 3],
      ]);
      policies.forEach((p, i) => {
        policyRows(batch, i).forEach((row, k) => {
          const direct = sequenceKl(directTokenLogProbs(p.model, row), directTokenLogProbs(refs[i]!, row), estimator);
          const got = kls[i]![Math.floor(k / 3)]![k % 3]!;
          expect(Math.abs(got - direct)).toBeLessThan(1e-4 * Math.max(1, Math.abs(direct)));
        });
      });
      if (estimator === "k3") expect(kls.flat(2).every((x) => x >= 0)).toBe(true);
      expect(kls.flat(2).some((x) => Math.abs(x) > 1e-3)).toBe(true);
    }
    // A model against its own frozen copy: exactly 0.
    const self = referenceKls(
      base,
      base.map((a) => frozenReference(a.model)),
      batch,
    );
    expect(self.flat(2).every((x) => x === 0)).toBe(true);
    policies.forEach((p) => p.model.dispose());
  });

  it("penalties are coef · KL, with the metrics", () => {
    const policies = base.map((a) => ({ model: frozenReference(a.model), padTokenId: a.padTokenId }));
    policies.forEach((p, i) => perturb(p.model, 0.05, 7 + i));
    const refs = base.map((a) => a.model);
    const kls = referenceKls(policies, refs, batch);
    const { penalties, metrics } = referenceKlPenalties(batch, { agents: policies, references: refs, coef: 0.25 });
    penalties.forEach((a, i) => a.forEach((r, k) => r.forEach((p, g) => expect(p).toBe(0.25 * kls[i]![k]![g]!))));
    const all = kls.flat(2);
    const meanKl = all.reduce((a, b) => a + b, 0) / all.length;
    expect(metrics!["turn_1/reference_kl_mean"]).toBeCloseTo(meanKl, 12);
    expect(metrics!["turn_1/reference_kl_penalty_mean"]).toBeCloseTo(0.25 * meanKl, 12);
    expect(metrics!["agent_1/reference_kl_mean"]).toBeCloseTo(kls[1]!.flat().reduce((a, b) => a + b, 0) / 9, 12);
    expect(() => referenceKlShaping({ agents: policies, references: refs, coef: -0.1 })).toThrow(/reference_kl_coef must be a finite number ≥ 0/);
    expect(() => referenceKlShaping({ agents: policies, references: refs.slice(1), coef: 0.1 })).toThrow(/1 reference model\(s\) for 2 agent\(s\)/);
    policies.forEach((p) => p.model.dispose());
  });

  async function train(agents: TestAgent[], refs: CausalLM[] | undefined, coef: number, epochs = 3): Promise<void> {
    await runRlEpochs({
      agents,
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(agents, 21),
      numGenerations: 4,
      // Rewards long first-agent responses: pulls the policies away from their start.
      reward: (c) => c[0]!.map((t, g) => t.length / 4 + c[1]![g]!.length / 8),
      mode: "mean",
      normalize: false,
      numTrainEpochs: epochs,
      trainBatchSize: 3,
      shuffleRng: RngStream.fromSeed(3, "shuffle"),
      ...(refs !== undefined ? { shaping: referenceKlShaping({ agents, references: refs, coef }) } : {}),
    });
  }

  it("coef = 0 trains exactly as without shaping (bitwise identical weights)", async () => {
    const plain = copyAgents(base, { lr: 1e-2 });
    const zero = copyAgents(base, { lr: 1e-2 });
    const refs = zero.map((a) => frozenReference(a.model));
    await train(plain, undefined, 0);
    await train(zero, refs, 0);
    expect(maxWeightDiff(plain[0]!.model, base[0]!.model)).toBeGreaterThan(1e-4);
    for (let i = 0; i < 2; i++) expect(maxWeightDiff(plain[i]!.model, zero[i]!.model)).toBe(0);
    [plain, zero].forEach(disposeAgents);
    refs.forEach((r) => r.dispose());
  });

  it("a large coefficient keeps the policy closer to its reference than no penalty (fixed seed)", async () => {
    // A small learning rate over several updates: AdamW's first steps are ≈ lr·sign(g), so the
    // penalty needs a few steps to shape the direction. (wasm and cpu: free ≈ 0.33/0.49, held ≈ 0.17/0.15.)
    const lr = 5e-4;
    const coef = 5;
    const epochs = 4;
    const free = copyAgents(base, { lr });
    const held = copyAgents(base, { lr });
    const refs = held.map((a) => frozenReference(a.model));
    await train(free, undefined, 0, epochs);
    await train(held, refs, coef, epochs);
    // The KL of the next-token distributions over completions sampled from the initial policy.
    const evalSet = await collectRollouts({
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(base, 99),
      numGenerations: 4,
      reward: () => [0, 0, 0, 0],
    });
    for (let i = 0; i < 2; i++) {
      const rows = policyRows(evalSet, i);
      const klFree = exactKl(free[i]!.model, base[i]!.model, rows);
      const klHeld = exactKl(held[i]!.model, refs[i]!, rows);
      expect(klFree).toBeGreaterThan(1e-3);
      expect(klHeld, `agent ${i}: KL ${klHeld} with the penalty vs ${klFree} without`).toBeLessThan(0.7 * klFree);
    }
    [free, held].forEach(disposeAgents);
    refs.forEach((r) => r.dispose());
  });
});

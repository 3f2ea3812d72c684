// The reference KL's bookkeeping on the tiny model: the default estimator, an empty batch (no
// scoring at all), the scorer path (the same numbers as in this thread), and the messages of
// every check (the field, the value, the fix).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeviceUnavailableError, RngStream, tf } from "@pbrl/core-tensor";
import { scoreCompletions, type CausalLM, type ScoringItem } from "@pbrl/models";
import {
  collectRollouts,
  frozenReference,
  localPolicyGradientAgents,
  policyRows,
  referenceKlPenalties,
  referenceKls,
  referenceKlsFrom,
  referenceKlShaping,
  sequenceKl,
  tokenKl,
  type KlEstimator,
  type KlPolicy,
  type PolicyScorer,
  type ReturnShaping,
  type Rollout,
} from "../src/index.js";
import { disposeAgents, formatters, ITEMS, makeAgents, sampler, type TestAgent } from "./helpers.js";

function perturb(model: CausalLM, scale: number, seed: number): void {
  let s = seed;
  for (const v of model.params.values()) tf.tidy(() => v.assign(tf.add(v, tf.mul(tf.randomNormal(v.shape, 0, 1, "float32", s++), scale))));
}

describe("reference KL: defaults, empty batches, the scorer path and the messages", () => {
  let base: TestAgent[];
  let batch: Rollout[];
  let policies: KlPolicy[];
  let refs: CausalLM[];
  beforeAll(async () => {
    base = await makeAgents(2, { stops: [2, 327, 346, 137], padTokenId: 327 });
    batch = await collectRollouts({ items: ITEMS.slice(0, 2), formatters: formatters(2), sampler: sampler(base, 5), numGenerations: 2, reward: () => [1, 2] });
    policies = base.map((a, i) => {
      const model = frozenReference(a.model);
      perturb(model, 0.05, 40 + i);
      return { model, padTokenId: a.padTokenId };
    });
    refs = base.map((a) => a.model);
  });
  afterAll(() => {
    policies.forEach((p) => p.model.dispose());
    disposeAgents(base);
  });

  /** The agents' own scorer, recording which agent it was asked to score and with what batch size. */
  function recordingScorer(calls: [number, number, number][]): PolicyScorer {
    // Scoring never touches an optimizer: the base agents' ones only fill the type.
    const local = localPolicyGradientAgents(policies.map((p, i) => ({ ...base[i]!, ...p })));
    return { tokenLogProbs: (i: number, rows: ScoringItem[], bs: number) => (calls.push([i, rows.length, bs]), local.tokenLogProbs(i, rows, bs)) };
  }

  it("k1 is the default estimator of tokenKl", () => {
    // log π = [−1, −2], log π_ref = [−1.5, −1]: k1 = [−1 + 1.5, −2 + 1] = [0.5, −1] (k3 would be [e^−0.5 − 0.5, e − 2]).
    expect(tokenKl([-1, -2], [-1.5, -1])).toEqual([0.5, -1]);
    // sequenceKl sums them: 0.5 + (−1) = −0.5, with k1 by default too.
    expect(sequenceKl([-1, -2], [-1.5, -1])).toBe(-0.5);
    // k3 with r = log π_ref − log π = [−0.5, 1]: e^r − 1 − r = [e^−0.5 − 1 + 0.5, e − 1 − 1].
    const k3 = tokenKl([-1, -2], [-1.5, -1], "k3");
    expect(k3[0]).toBeCloseTo(Math.exp(-0.5) - 0.5, 14);
    expect(k3[1]).toBeCloseTo(Math.E - 2, 14);
    expect(() => tokenKl([-1], [])).toThrow(/^KL: 1 policy log-probs but 0 reference log-probs; one per completion token each$/);
  });

  it("a fresh LoRA agent is referenced by its base with the adapter off (no copy); a plain model by a copy of its own", () => {
    const plain = frozenReference(base[0]!.model);
    expect(plain.adapter).toBeUndefined();
    expect(plain.sharesBaseWith(base[0]!.model)).toBe(false);
    const lora = plain.withLora({ r: 4, alpha: 8, dropout: 0, targetModules: undefined, useRslora: false }, RngStream.fromSeed(1, "lora"));
    for (const device of [undefined, "auto", lora.device()]) {
      const ref = frozenReference(lora, device);
      expect(ref.adapter).toBeUndefined();
      expect(ref.sharesBaseWith(lora)).toBe(true);
      ref.dispose();
    }
    // Another device is never answered by the base where the policy is: it is a copy there, so
    // a device no backend has is refused.
    expect(() => frozenReference(lora, "cuda:99")).toThrow(DeviceUnavailableError);
    lora.dispose();
    plain.dispose();
  });

  it("an empty batch: no KL, nothing scored, every metric 0 (the mean of nothing)", async () => {
    expect(referenceKls(policies, refs, [])).toEqual([[], []]);
    const calls: [number, number, number][] = [];
    const scorer = recordingScorer(calls);
    expect(await referenceKlsFrom(scorer, policies, refs, [])).toEqual([[], []]);
    const zero = {
      penalties: [[], []],
      metrics: { "agent_0/reference_kl_mean": 0, "agent_1/reference_kl_mean": 0, "turn_1/reference_kl_mean": 0, "turn_1/reference_kl_penalty_mean": 0 },
    };
    expect(await referenceKlShaping({ agents: policies, references: refs, coef: 0.5, scorer })([])).toEqual(zero);
    expect(referenceKlPenalties([], { agents: policies, references: refs, coef: 0.5 })).toEqual(zero);
    expect(calls).toEqual([]);
  });

  it("scored by a scorer: the same KLs and penalties as in this thread, at the batch size asked for (default 16)", async () => {
    const calls: [number, number, number][] = [];
    const scorer = recordingScorer(calls);
    for (const estimator of ["k1", "k3"] as const) {
      const here = referenceKls(policies, refs, batch, { estimator, batchSize: 3 });
      const there = await referenceKlsFrom(scorer, policies, refs, batch, { estimator, batchSize: 3 });
      expect(there.map((a) => a.map((r) => r.length))).toEqual([
        [2, 2],
        [2, 2],
      ]);
      there.flat(2).forEach((x, k) => expect(x).toBeCloseTo(here.flat(2)[k]!, 5));
      // Row k of agent i is generation k % 2 of rollout ⌊k / 2⌋: its KL from each row scored alone.
      policies.forEach((p, i) =>
        policyRows(batch, i).forEach((row, k) => {
          const alone = (m: CausalLM): number[] => scoreCompletions(m, [row], { padTokenId: 327, batchSize: 1 }).tokenLogProbs[0]!;
          expect(here[i]![Math.floor(k / 2)]![k % 2]!).toBeCloseTo(sequenceKl(alone(p.model), alone(refs[i]!), estimator), 4);
        }),
      );
      expect(there.flat(2).some((x) => Math.abs(x) > 1e-3)).toBe(true);
    }
    // Each agent scored once per call on its 2 items × 2 generations = 4 rows.
    expect(calls).toEqual([
      [0, 4, 3],
      [1, 4, 3],
      [0, 4, 3],
      [1, 4, 3],
    ]);
    calls.length = 0;
    const kls = referenceKls(policies, refs, batch);
    const hook = referenceKlShaping({ agents: policies, references: refs, coef: 2, scorer });
    const { penalties, metrics } = await hook(batch);
    expect(calls).toEqual([
      [0, 4, 16],
      [1, 4, 16],
    ]);
    penalties.flat(2).forEach((p, k) => expect(p).toBeCloseTo(2 * kls.flat(2)[k]!, 5));
    const all = kls.flat(2);
    const meanKl = all.reduce((a, b) => a + b, 0) / 8;
    expect(metrics!["turn_1/reference_kl_mean"]).toBeCloseTo(meanKl, 5);
    expect(metrics!["turn_1/reference_kl_penalty_mean"]).toBeCloseTo(2 * meanKl, 5);
    expect(metrics!["agent_0/reference_kl_mean"]).toBeCloseTo(kls[0]!.flat().reduce((a, b) => a + b, 0) / 4, 5);
    // Without a scorer the hook scores in this thread: exactly referenceKlPenalties.
    const local = referenceKlShaping({ agents: policies, references: refs, coef: 2 })(batch) as ReturnShaping;
    expect(local).toEqual(referenceKlPenalties(batch, { agents: policies, references: refs, coef: 2 }));
    expect(local.penalties.flat(2)).toEqual(kls.flat(2).map((x) => 2 * x));
  });

  it("names the agent and sample of a non-finite KL", () => {
    const broken = frozenReference(base[1]!.model);
    const w = broken.params.get("model.norm.weight")!;
    w.assign(tf.fill(w.shape, NaN));
    const agents = [policies[0]!, { model: broken, padTokenId: 327 }];
    expect(() => referenceKlPenalties(batch, { agents, references: refs, coef: 1 })).toThrow(
      /^reference KL of agent 1 is NaN on sample 0 of the batch; the policy or its reference produced a non-finite log-prob$/,
    );
    broken.dispose();
  });

  it("rejects a wrong reference count, an unknown estimator and a bad coefficient, saying what to give", async () => {
    const scorer = recordingScorer([]);
    const one = refs.slice(1);
    const countMsg = /^reference KL: 1 reference model\(s\) for 2 agent\(s\); reference_devices \/ the frozen copies must give one per agent$/;
    expect(() => referenceKls(policies, one, batch)).toThrow(countMsg);
    await expect(referenceKlsFrom(scorer, policies, one, batch)).rejects.toThrow(countMsg);
    expect(() => referenceKlShaping({ agents: policies, references: one, coef: 0.1 })).toThrow(/^reference KL: 1 reference model\(s\) for 2 agent\(s\)$/);
    expect(() => referenceKls(policies, refs, batch, { estimator: "k2" as KlEstimator })).toThrow(/^KL estimator must be one of k1, k3, got "k2"$/);
    await expect(referenceKlsFrom(scorer, policies, refs, batch, { estimator: "k2" as KlEstimator })).rejects.toThrow(
      /^KL estimator must be one of k1, k3, got "k2"$/,
    );
    // coef = 0 is allowed: every penalty 0 · KL = 0.
    expect(
      referenceKlPenalties(batch, { agents: policies, references: refs, coef: 0 })
        .penalties.flat(2)
        .every((p) => p === 0),
    ).toBe(true);
    for (const coef of [-0.1, NaN, Infinity]) {
      const msg = new RegExp(`^reference_kl_coef must be a finite number ≥ 0, got ${coef}$`);
      expect(() => referenceKlShaping({ agents: policies, references: refs, coef })).toThrow(msg);
      expect(() => referenceKlPenalties(batch, { agents: policies, references: refs, coef })).toThrow(msg);
    }
  });
});

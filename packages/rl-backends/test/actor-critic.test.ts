import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { scoreCompletions, type CausalLM } from "@pbrl/models";
import {
  ActorValueHead,
  Critic,
  actorCriticAdvantages,
  actorCriticUpdate,
  actorCriticValues,
  collectRollouts,
  frozenReference,
  maacCriticText,
  meanValueLoss,
  policyRows,
  referenceKlShaping,
  runActorCriticEpochs,
  shapedReturns,
  type ActorCriticSetup,
  type BatchReport,
  type CriticType,
  type Rollout,
} from "../src/index.js";
import { copyAgents, disposeAgents, formatters, ITEMS, makeAgents, maxWeightDiff, sampler, tinyLlama, type TestAgent } from "./helpers.js";

const STOPS = [2, 327, 346, 137];
const SHAPES = [
  [1, 3],
  [0, 0.5],
  [4, 2],
];

describe("actorCriticAdvantages", () => {
  it("A = R' − V, then the batch-level z-score with normalisation (hand-computed)", () => {
    const shaped = [
      [1, 2],
      [3, 5],
    ];
    const values = [
      [0.5, 0.5],
      [4, 4],
    ];
    expect(actorCriticAdvantages(shaped, values, false)).toEqual([
      [0.5, 1.5],
      [-1, 1],
    ]);
    // mean 0.5; deviations [0, 1, −1.5, 0.5]; std_pop = √(3.5/4) = 0.935414…
    const s = Math.sqrt(0.875);
    const z = actorCriticAdvantages(shaped, values, true);
    [
      [0, 1 / s],
      [-1.5 / s, 0.5 / s],
    ].forEach((row, r) => row.forEach((x, g) => expect(z[r]![g]).toBeCloseTo(x, 12)));
    // One sample: left as is; no spread: only centred.
    expect(actorCriticAdvantages([[2]], [[0.5]], true)).toEqual([[1.5]]);
    expect(actorCriticAdvantages([[2, 2]], [[1, 1]], true)).toEqual([[0, 0]]);
    expect(() => actorCriticAdvantages([[1, 2]], [[1]], true)).toThrow(/2 return\(s\) but 1 value/);
  });
});

describe("actor-critic updates", () => {
  let base: TestAgent[];
  let batch: Rollout[];
  let tokenizer: Parameters<typeof Critic.create>[0]["tokenizer"];
  let backbone: CausalLM;
  const mk = (seed: number, lr = 3e-3) => Critic.create({ backbone, tokenizer, rng: RngStream.fromSeed(seed, "critic"), learningRate: lr, weightDecay: 0 });
  beforeAll(async () => {
    ({ model: backbone, tokenizer } = await tinyLlama());
    base = await makeAgents(2, { stops: STOPS, padTokenId: 327 });
    batch = await collectRollouts({
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(base, 11),
      numGenerations: 2,
      reward: (_c, ctx) => SHAPES[ctx.itemIndex]!,
    });
  });
  afterAll(() => disposeAgents(base));

  it("MAAC: V(s) baseline shared by generations and agents; hand-checked policy and value losses", () => {
    const agents = copyAgents(base, { lr: 1e-3 });
    const c = mk(1);
    const setup: ActorCriticSetup = { algorithm: "maac", critic: c };
    const penalties = [batch.map((_, k) => [0.1 * k, 0.2]), batch.map(() => [0, 0.4])];
    const v = actorCriticValues(agents, setup, batch, "v");
    const direct = c.predict(batch.map((r) => maacCriticText(r.prompts)));
    batch.forEach((_, r) => [0, 1].forEach((a) => expect(v[a]![r]).toEqual([direct[r], direct[r]])));
    const lp = agents.map((a, i) => scoreCompletions(a.model, policyRows(batch, i), { padTokenId: 327 }).sums);
    const m = actorCriticUpdate(agents, setup, batch, { criticType: "v", normalize: true, valueLossCoef: 0.6, penalties, where: "epoch 1, batch 1" });
    for (let i = 0; i < 2; i++) {
      const adv = actorCriticAdvantages(shapedReturns(batch, i, penalties), v[i]!, true).flat();
      expect(m[`agent_${i}/loss`]).toBeCloseTo(lp[i]!.reduce((s, x, r) => s - x * adv[r]!, 0) / 6, 3);
      expect(m[`agent_${i}/value_mean`]).toBeCloseTo(direct.reduce((a, b) => a + b, 0) / 3, 6);
    }
    // The critic's target: the mean over agents of the shaped returns.
    const target = batch.flatMap((r, k) => r.returns.map((R, g) => R - (penalties[0]![k]![g]! + penalties[1]![k]![g]!) / 2));
    const pred = batch.flatMap((_, k) => [direct[k]!, direct[k]!]);
    expect(m["critic/value_loss"]).toBeCloseTo(meanValueLoss(pred, target), 5);
    expect(m["critic/target_mean"]).toBeCloseTo(target.reduce((a, b) => a + b, 0) / 6, 10);
    expect(m["turn_1/reward_mean"]).toBeCloseTo(SHAPES.flat().reduce((a, b) => a + b, 0) / 6, 10);
    expect(maxWeightDiff(agents[0]!.model, base[0]!.model)).toBeGreaterThan(1e-5);
    disposeAgents(agents);
    c.dispose();
  });

  it("MAAC q: one Q(s, a_g) per joint generation; the critic moves toward the returns on a fixed batch", () => {
    const agents = copyAgents(base, { lr: 1e-4 });
    const c = mk(2, 3e-3);
    const setup: ActorCriticSetup = { algorithm: "maac", critic: c };
    const v = actorCriticValues(agents, setup, batch, "q");
    const direct = c.predict(
      batch.flatMap((r) =>
        [0, 1].map((g) =>
          maacCriticText(
            r.prompts,
            r.texts.map((t) => t[g]!),
          ),
        ),
      ),
    );
    expect(v[0]!.flat()).toEqual(direct);
    expect(v[1]).toEqual(v[0]);
    const err = (vals: number[][]) => vals.flat().reduce((a, x, j) => a + Math.abs(x - SHAPES.flat()[j]!), 0);
    const before = err(v[0]!);
    const losses: number[] = [];
    for (let s = 0; s < 12; s++)
      losses.push(actorCriticUpdate(agents, setup, batch, { criticType: "q", normalize: false, valueLossCoef: 1, where: `step ${s}` })["critic/value_loss"]!);
    expect(err(actorCriticValues(agents, setup, batch, "q")[0]!)).toBeLessThan(0.5 * before);
    expect(losses.at(-1)!).toBeLessThan(0.5 * losses[0]!);
    disposeAgents(agents);
    c.dispose();
  });

  it("IAC separate: each agent's critic reads its own prompt and fits its own shaped returns", () => {
    const agents = copyAgents(base, { lr: 1e-3 });
    const critics = [mk(3), mk(4)];
    const setup: ActorCriticSetup = { algorithm: "iac", layout: "separate", critics };
    const v = actorCriticValues(agents, setup, batch, "v");
    batch.forEach((r, k) => [0, 1].forEach((i) => expect(v[i]![k]![0]).toBeCloseTo(critics[i]!.predict([r.prompts[i]!])[0]!, 6)));
    const penalties = [batch.map(() => [0.5, 0]), batch.map(() => [0, 0])];
    const before1 = critics[1]!.predict([batch[0]!.prompts[1]!])[0]!;
    const m = actorCriticUpdate(agents, setup, batch, { criticType: "v", normalize: false, valueLossCoef: 0.6, valueClipRange: 0.2, penalties, where: "b" });
    for (let i = 0; i < 2; i++) {
      expect(m[`agent_${i}/value_loss`]).toBeCloseTo(meanValueLoss(v[i]!.flat(), shapedReturns(batch, i, penalties).flat()), 5);
      expect(m[`agent_${i}/clip_fraction`]).toBe(0); // V = V_old on the first update
    }
    expect(m["critic/value_loss"]).toBeCloseTo((m["agent_0/value_loss"]! + m["agent_1/value_loss"]!) / 2, 10);
    expect(critics[1]!.predict([batch[0]!.prompts[1]!])[0]).not.toBeCloseTo(before1, 5);
    disposeAgents(agents);
    critics.forEach((c) => c.dispose());
  });

  for (const type of ["v", "q"] as CriticType[]) {
    it(`IAC shared (${type}): one forward gives log-probs and values; the value loss trains the actor's backbone`, () => {
      const heads = (seed: number) =>
        base.map((_, i) =>
          ActorValueHead.create({ hiddenSize: 64, hiddenDim: 0, rng: RngStream.fromSeed(seed + i, "vh"), learningRate: 1e-3, weightDecay: 0 }),
        );
      const withV = copyAgents(base, { lr: 1e-3, eps: 1e3 });
      const noV = copyAgents(base, { lr: 1e-3, eps: 1e3 });
      const h1 = heads(10);
      const h2 = heads(10);
      const s1: ActorCriticSetup = { algorithm: "iac", layout: "shared", valueHeads: h1 };
      const s2: ActorCriticSetup = { algorithm: "iac", layout: "shared", valueHeads: h2 };
      const v = actorCriticValues(withV, s1, batch, type);
      if (type === "v")
        v.forEach((a) => a.forEach((r) => expect(r[0]).toBeCloseTo(r[1]!, 5))); // V(prompt): same for both generations
      else expect(v[0]!.some((r) => Math.abs(r[0]! - r[1]!) > 1e-6)).toBe(true);
      const lp = withV.map((a, i) => scoreCompletions(a.model, policyRows(batch, i), { padTokenId: 327 }).sums);
      const m = actorCriticUpdate(withV, s1, batch, {
        criticType: type,
        normalize: false,
        valueLossCoef: 1,
        valueClipRange: 0.2,
        where: "b",
        maxRowsPerForward: 4,
      });
      actorCriticUpdate(noV, s2, batch, { criticType: type, normalize: false, valueLossCoef: 0, where: "b" });
      for (let i = 0; i < 2; i++) {
        const adv = actorCriticAdvantages(shapedReturns(batch, i), v[i]!, false).flat();
        expect(m[`agent_${i}/loss`]).toBeCloseTo(lp[i]!.reduce((s, x, r) => s - x * adv[r]!, 0) / 6, 3);
        expect(m[`agent_${i}/value_loss`]).toBeCloseTo(meanValueLoss(v[i]!.flat(), SHAPES.flat()), 4);
        // Same policy gradient, plus the value gradient in one of them: the backbones differ.
        const moved = maxWeightDiff(noV[i]!.model, base[i]!.model);
        expect(moved).toBeGreaterThan(1e-7);
        expect(maxWeightDiff(withV[i]!.model, noV[i]!.model)).toBeGreaterThan(1e-3 * moved);
      }
      // Warmed up (optimizer slots exist): an update leaves no tensor behind.
      const n = liveTensorCount();
      actorCriticUpdate(withV, s1, batch, { criticType: type, normalize: true, valueLossCoef: 1, valueClipRange: 0.2, where: "b2", maxRowsPerForward: 4 });
      expect(liveTensorCount()).toBe(n);
      [withV, noV].forEach(disposeAgents);
      [...h1, ...h2].forEach((h) => h.dispose());
    });
  }

  it("rejects a critic count that does not match the agents", () => {
    const c = mk(5);
    expect(() =>
      actorCriticUpdate(base, { algorithm: "iac", layout: "separate", critics: [c] }, batch, {
        criticType: "v",
        normalize: false,
        valueLossCoef: 1,
        where: "b",
      }),
    ).toThrow(/one critic per agent: got 1 critic\(s\) for 2 agent\(s\)/);
    expect(() => actorCriticValues(base, { algorithm: "maac", critic: c }, batch, "x" as CriticType)).toThrow(/critic_type must be "v" or "q"/);
    c.dispose();
  });
});

describe("runActorCriticEpochs", () => {
  let base: TestAgent[];
  beforeAll(async () => {
    base = await makeAgents(2, { stops: STOPS, padTokenId: 327 });
  });
  afterAll(() => disposeAgents(base));

  async function run(agents: TestAgent[], setup: ActorCriticSetup, o: { kl?: CausalLM[]; buffer?: number; type?: CriticType } = {}): Promise<BatchReport[]> {
    const reports: BatchReport[] = [];
    await runActorCriticEpochs({
      agents,
      setup,
      criticType: o.type ?? "v",
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(agents, 31),
      numGenerations: 2,
      reward: (c) => c[0]!.map((t, g) => t.length / 4 - c[1]![g]!.length / 8),
      normalize: true,
      valueLossCoef: 0.6,
      valueClipRange: 0.2,
      numTrainEpochs: 2,
      trainBatchSize: 1,
      rolloutBufferSize: o.buffer,
      shuffleRng: RngStream.fromSeed(4, "shuffle"),
      ...(o.kl !== undefined ? { shaping: referenceKlShaping({ agents, references: o.kl, coef: 0 }) } : {}),
      onBatch: (r) => void reports.push(r),
    });
    return reports;
  }

  it("MAAC with a rollout buffer: mini-batch updates per collection; KL coef 0 is bitwise the same as no KL", async () => {
    const { model, tokenizer } = await tinyLlama();
    const a1 = copyAgents(base, { lr: 1e-3 });
    const a2 = copyAgents(base, { lr: 1e-3 });
    const c1 = Critic.create({ backbone: model, tokenizer, rng: RngStream.fromSeed(9, "c"), learningRate: 1e-3 });
    const c2 = Critic.create({ backbone: model, tokenizer, rng: RngStream.fromSeed(9, "c"), learningRate: 1e-3 });
    const refs = a2.map((a) => frozenReference(a.model));
    const r1 = await run(a1, { algorithm: "maac", critic: c1 }, { buffer: 3 });
    const r2 = await run(a2, { algorithm: "maac", critic: c2 }, { buffer: 3, kl: refs });
    expect(r1.map((r) => [r.epoch, r.batch, r.batchesPerEpoch, r.jointEvaluations, r.metrics["rl/updates"]])).toEqual([
      [1, 1, 1, 6, 3],
      [2, 1, 1, 6, 3],
    ]);
    expect(r2[0]!.metrics["turn_1/reference_kl_mean"]).toBeDefined();
    expect(r1[0]!.metrics["critic/value_loss"]).toBeGreaterThan(0);
    expect(r1[0]!.metrics["critic/clip_fraction"]).toBeGreaterThanOrEqual(0);
    for (let i = 0; i < 2; i++) expect(maxWeightDiff(a1[i]!.model, a2[i]!.model)).toBe(0);
    expect(maxWeightDiff(c1.backbone, c2.backbone)).toBe(0);
    expect(maxWeightDiff(a1[0]!.model, base[0]!.model)).toBeGreaterThan(1e-5);
    [a1, a2].forEach(disposeAgents);
    [c1, c2].forEach((c) => c.dispose());
    refs.forEach((r) => r.dispose());
  });

  it("IAC, both layouts, end to end", async () => {
    const { model, tokenizer } = await tinyLlama();
    const a1 = copyAgents(base, { lr: 1e-3 });
    const critics = [0, 1].map((i) => Critic.create({ backbone: model, tokenizer, rng: RngStream.fromSeed(20 + i, "c"), learningRate: 1e-3 }));
    const sep = await run(a1, { algorithm: "iac", layout: "separate", critics }, { type: "q" });
    expect(sep).toHaveLength(6);
    expect(sep[0]!.metrics["agent_1/value_loss"]).toBeGreaterThan(0);
    const a2 = copyAgents(base, { lr: 1e-3 });
    const heads = [0, 1].map((i) => ActorValueHead.create({ hiddenSize: 64, hiddenDim: 8, rng: RngStream.fromSeed(30 + i, "h"), learningRate: 1e-3 }));
    const shared = await run(a2, { algorithm: "iac", layout: "shared", valueHeads: heads }, { buffer: 2 });
    expect(shared.map((r) => r.metrics["rl/updates"])).toEqual([2, 1, 2, 1]);
    expect(maxWeightDiff(a2[1]!.model, base[1]!.model)).toBeGreaterThan(1e-5);
    [a1, a2].forEach(disposeAgents);
    critics.forEach((c) => c.dispose());
    heads.forEach((h) => h.dispose());
  });
});

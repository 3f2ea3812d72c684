// Bradley–Terry training on a small fixed set of pairs with a clear signal: the winner's agent-2
// response ends with a marker word, the loser's with an ordinary word (test/helpers.ts). Real
// tiny-llama backbone, seeded head and shuffles.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertNoTensorLeak, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import type { PairRecord } from "@pbrl/preference-data";
import { JointRewardModel, type RewardBatchMetrics } from "../src/index.js";
import { markerPairs, TINY_LLAMA } from "./helpers.js";

/** Every backbone weight, copied to the host. */
function snapshot(model: CausalLM): Map<string, Float32Array> {
  return new Map([...model.params].map(([name, v]) => [name, Float32Array.from(v.dataSync())]));
}

/** Names of the weights that differ in any bit. */
function changed(before: Map<string, Float32Array>, model: CausalLM): string[] {
  const out: string[] = [];
  for (const [name, v] of model.params) {
    const a = before.get(name)!;
    const b = v.dataSync();
    if (a.length !== b.length || a.some((x, i) => !Object.is(x, b[i]))) out.push(name);
  }
  return out;
}

const METRIC_KEYS = ["reward/loss", "reward/accuracy", "reward/margin"];
const train: PairRecord[] = markerPairs(RngStream.fromSeed(1, "pairs"), 24);
const heldOut: PairRecord[] = markerPairs(RngStream.fromSeed(2, "pairs"), 16);

describe("Bradley–Terry training with a frozen backbone (reward_freeze_backbone)", () => {
  let rm: JointRewardModel;
  let before: Map<string, Float32Array>;
  let head0: Float32Array;
  beforeAll(async () => {
    rm = await JointRewardModel.create({ source: TINY_LLAMA, freezeBackbone: true, rng: RngStream.fromSeed(3, "head") });
    before = snapshot(rm.backbone);
    head0 = Float32Array.from(rm.head.params.get("reward_head.weight")!.dataSync());
  });
  afterAll(() => rm.dispose());

  it("lowers reward/loss and raises reward/accuracy, on the training pairs and held-out ones", async () => {
    const start = rm.evaluate(train);
    const startHeld = rm.evaluate(heldOut);
    expect(start.pairs).toBe(train.length);
    const batches: RewardBatchMetrics[] = [];
    const result = await rm.train(train, {
      learningRate: 0.05,
      epochs: 4,
      batchSize: 8,
      rng: RngStream.fromSeed(4, "shuffle"),
      onBatch: (m) => void batches.push(m),
    });

    expect(result.steps).toBe(12);
    expect(result.epochs).toHaveLength(4);
    expect(batches).toHaveLength(12);
    expect(batches[0]).toMatchObject({ epoch: 1, batch: 1, step: 1, pairs: 8 });
    expect(batches.at(-1)).toMatchObject({ epoch: 4, batch: 3, step: 12, pairs: 8 });
    for (const m of [...batches, ...result.epochs]) for (const k of METRIC_KEYS) expect(Number.isFinite(m[k as keyof typeof m])).toBe(true);

    const end = rm.evaluate(train);
    const endHeld = rm.evaluate(heldOut);
    console.log(
      `[frozen] train loss ${start["reward/loss"].toFixed(4)} → ${end["reward/loss"].toFixed(4)}, acc ${start["reward/accuracy"]} → ${end["reward/accuracy"]}, margin ${start["reward/margin"].toFixed(4)} → ${end["reward/margin"].toFixed(4)}; held-out acc ${startHeld["reward/accuracy"]} → ${endHeld["reward/accuracy"]}`,
    );
    expect(end["reward/loss"]).toBeLessThan(start["reward/loss"] - 0.1);
    expect(end["reward/accuracy"]).toBeGreaterThan(start["reward/accuracy"]);
    expect(end["reward/accuracy"]).toBeGreaterThanOrEqual(0.9);
    expect(end["reward/margin"]).toBeGreaterThan(start["reward/margin"]);
    expect(endHeld["reward/accuracy"]).toBeGreaterThanOrEqual(0.9);
    expect(endHeld["reward/accuracy"]).toBeGreaterThan(startHeld["reward/accuracy"]);
    expect(result.epochs.at(-1)!["reward/loss"]).toBeLessThan(result.epochs[0]!["reward/loss"]);
  });

  it("leaves every backbone weight bit-identical while the head moves", () => {
    expect(changed(before, rm.backbone)).toEqual([]);
    const head1 = rm.head.params.get("reward_head.weight")!.dataSync();
    expect(head1.some((x, i) => x !== head0[i])).toBe(true);
  });

  it("is reproducible: the same seeds give the same metrics and scores, bit for bit", async () => {
    const run = async () => {
      const m = await JointRewardModel.create({ source: TINY_LLAMA, freezeBackbone: true, rng: RngStream.fromSeed(3, "head") });
      const r = await m.train(train.slice(0, 12), { learningRate: 0.02, epochs: 2, batchSize: 4, rng: RngStream.fromSeed(4, "shuffle") });
      const s = m.scores(heldOut.slice(0, 4).map((p) => ({ prompts: p.prompts, completions: p.winner_completions })));
      m.dispose();
      return { epochs: r.epochs, s };
    };
    expect(await run()).toEqual(await run());
  });

  it("training and evaluation leave no tensors behind", async () => {
    const opts = { learningRate: 0.01, epochs: 1, batchSize: 5, rng: RngStream.fromSeed(9, "shuffle") };
    await rm.train(train.slice(0, 5), opts); // warm-up
    await assertNoTensorLeak("train (frozen)", () => rm.train(train.slice(0, 7), opts));
    await assertNoTensorLeak("evaluate", () => rm.evaluate(heldOut.slice(0, 3), { batchSize: 2 }));
  });
});

describe("Bradley–Terry training of the whole model", () => {
  it("moves the backbone too, lowers the loss, and never touches the checkpoint it was copied from", async () => {
    const source = await loadPretrained(TINY_LLAMA);
    const sourceBefore = snapshot(source.model);
    const rm = await JointRewardModel.create({ source, rng: RngStream.fromSeed(3, "head") });
    try {
      expect(rm.freezeBackbone).toBe(false);
      const before = snapshot(rm.backbone);
      const pairs = train.slice(0, 8);
      const start = rm.evaluate(pairs);
      const opts = { learningRate: 0.003, epochs: 3, batchSize: 4, rng: RngStream.fromSeed(4, "shuffle") };
      const result = await rm.train(pairs, opts);
      const end = rm.evaluate(pairs);
      console.log(
        `[full] loss ${start["reward/loss"].toFixed(4)} → ${end["reward/loss"].toFixed(4)}, acc ${start["reward/accuracy"]} → ${end["reward/accuracy"]}`,
      );
      expect(result.steps).toBe(6);
      expect(end["reward/loss"]).toBeLessThan(start["reward/loss"]);
      expect(end["reward/accuracy"]).toBeGreaterThanOrEqual(start["reward/accuracy"]);
      // Every backbone weight that reaches the score gets a gradient and moves.
      const moved = changed(before, rm.backbone);
      expect(moved).toContain("model.embed_tokens.weight");
      expect(moved).toContain("model.layers.0.self_attn.q_proj.weight");
      expect(moved).toContain("model.norm.weight");
      expect(changed(sourceBefore, source.model)).toEqual([]);
      await assertNoTensorLeak("train (full)", () => rm.train(pairs.slice(0, 3), { ...opts, epochs: 1 }));
    } finally {
      rm.dispose();
      source.model.dispose();
    }
  });
});

describe("reward_weight_decay reaches AdamW", () => {
  it("one step with weightDecay 0.5 ends lr · 0.5 · w0 below the same step without decay", async () => {
    // PyTorch's AdamW step: w ← w · (1 − lr · wd) − lr · m̂ / (√v̂ + ε). Both models start from the
    // same head and see the same pairs in one batch, so their Adam terms are equal and the heads
    // differ by exactly lr · wd · w0 = 0.01 · 0.5 · w0 = 0.005 · w0.
    const pairs = train.slice(0, 4);
    const make = () => JointRewardModel.create({ source: TINY_LLAMA, freezeBackbone: true, rng: RngStream.fromSeed(5, "head") });
    const [plain, decayed] = [await make(), await make()];
    try {
      const w0 = Float32Array.from(plain.head.params.get("reward_head.weight")!.dataSync());
      const opts = { learningRate: 0.01, epochs: 1, batchSize: 4, rng: RngStream.fromSeed(6, "shuffle") };
      await plain.train(pairs, { ...opts, weightDecay: 0 });
      await decayed.train(pairs, { ...opts, rng: RngStream.fromSeed(6, "shuffle"), weightDecay: 0.5 });
      const a = plain.head.params.get("reward_head.weight")!.dataSync();
      const b = decayed.head.params.get("reward_head.weight")!.dataSync();
      const worst = Math.max(...Array.from(w0, (w, i) => Math.abs(a[i]! - b[i]! - 0.005 * w)));
      expect(worst).toBeLessThan(1e-6);
      expect(Math.max(...Array.from(w0, (w) => Math.abs(w)))).toBeGreaterThan(1e-2); // so the check above is no 0 ≈ 0
    } finally {
      plain.dispose();
      decayed.dispose();
    }
  });
});

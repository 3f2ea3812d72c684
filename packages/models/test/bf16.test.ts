// bf16 mixed precision (libtorch): matrix products and attention in bfloat16, float32 weights and
// AdamW state. The tolerances against the float32 path, measured on these fixtures and stated here:
//   one 256×256 product: relative error (Frobenius) between 1e-4 (bf16 did run) and 1e-2
//     (measured 2.9e-3: bfloat16 keeps 8 significant bits, products accumulate in float32);
//   the tiny Llama's logits: relative error ≤ 3% (measured 1.8%: products' outputs stay bfloat16,
//     as under torch.autocast);
//   30 AdamW steps on a fixed batch: the loss after 10 and 30 steps within 5% + 1e-3 of float32's
//     (measured 0.2750 vs float32's 0.2757 and 0.00426 vs 0.00419), both falling from 12.8.
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  AdamW,
  computePrecision,
  loadLibtorchAddon,
  nativeThreads,
  PrecisionUnavailableError,
  RngStream,
  setComputePrecision,
  storeInBf16,
  tf,
  useBackend,
} from "@pbrl/core-tensor";
import { bf16BitsToFloat32, float32ToBf16Bits } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, DEFAULT_LORA, loadPretrained } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

function relativeError(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let d = 0;
  let n = 0;
  for (let i = 0; i < want.length; i++) {
    d += (got[i]! - want[i]!) ** 2;
    n += want[i]! ** 2;
  }
  return Math.sqrt(d / n);
}

afterEach(async () => {
  if (tf.getBackend() === "libtorch") setComputePrecision("float32");
  await useBackend((process.env["PBRL_BACKEND"] ?? "wasm") as "wasm");
});

it("bf16 on a backend without it is an error that names libtorch; float32 is always fine", async () => {
  await useBackend("wasm");
  expect(() => setComputePrecision("bf16")).toThrow(PrecisionUnavailableError);
  expect(() => setComputePrecision("bf16")).toThrow(
    /^bf16 needs backend=libtorch \(the wasm backend computes in float32 only\); set backend=libtorch, or bf16=false$/,
  );
  expect(() => setComputePrecision("float32")).not.toThrow();
  expect(computePrecision()).toBe("float32");
});

describe.skipIf(missing !== undefined)(`bf16 on libtorch${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it("a product is bfloat16-accurate, and the precision is reported", async () => {
    await useBackend("libtorch");
    const a = tf.randomNormal([256, 256], 0, 1, "float32", 1);
    const b = tf.randomNormal([256, 256], 0, 1, "float32", 2);
    const f32 = tf.matMul(a, b).dataSync();
    setComputePrecision("bf16");
    expect(computePrecision()).toBe("bf16");
    const bf16 = tf.matMul(a, b).dataSync();
    const err = relativeError(bf16, f32);
    expect(err).toBeGreaterThan(1e-4);
    expect(err).toBeLessThan(1e-2);
    tf.dispose([a, b]);
  });

  it("logits stay within 3% and training follows the float32 run", async () => {
    await useBackend("libtorch");
    const losses: Record<string, number[]> = {};
    let logitsError = NaN;
    for (const precision of ["float32", "bf16"] as const) {
      setComputePrecision(precision);
      const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
      const opt = new AdamW(p.model.params, { lr: 3e-3, weightDecay: 0 });
      const rng = RngStream.fromSeed(0, "bf16-test");
      const vocab = p.model.config.vocabSize;
      const rows = Array.from({ length: 8 }, () => Array.from({ length: 24 }, () => rng.int(vocab)));
      if (precision === "bf16") {
        const ids = Int32Array.from(rows[0]!);
        const bf16 = p.model.forward({ ids, batch: 1, length: 24 }).dataSync();
        setComputePrecision("float32");
        const f32 = p.model.forward({ ids, batch: 1, length: 24 }).dataSync();
        setComputePrecision("bf16");
        logitsError = relativeError(bf16, f32);
      }
      const batch = buildScoringBatch(
        rows.map((r) => ({ promptIds: r.slice(0, 4), completionIds: r.slice(4) })),
        0,
      );
      losses[precision] = [];
      for (let s = 0; s < 30; s++) {
        const { value, grads } = tf.variableGrads(() => {
          const { tokens, sums } = completionLogProbs(p.model, batch);
          sums.dispose();
          return tf.neg(tf.mean(tokens)) as tf.Scalar;
        }, p.model.trainableVariables());
        opt.step(p.model.gradsByWeightName(grads));
        losses[precision]!.push(value.dataSync()[0]!);
        tf.dispose([value, ...Object.values(grads)]);
      }
      opt.dispose();
      p.model.dispose();
    }
    expect(logitsError).toBeGreaterThan(1e-4);
    expect(logitsError).toBeLessThanOrEqual(0.03);
    const [f, h] = [losses["float32"]!, losses["bf16"]!];
    expect(f[29]!).toBeLessThan(f[0]! / 100);
    for (const s of [9, 29]) expect(Math.abs(h[s]! - f[s]!)).toBeLessThanOrEqual(0.05 * f[s]! + 1e-3);
  });

  it("a LoRA base is held in bfloat16 alone: the float32 matrices are freed, products are unchanged, the adapter trains", async () => {
    await useBackend("libtorch");
    setComputePrecision("bf16");
    const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
    const base = p.model;
    const ids = Int32Array.from([3, 17, 42, 5, 99, 7, 64, 12]);
    const logits = (m: typeof base) => tf.tidy(() => Array.from(m.forward({ ids, batch: 1, length: ids.length }).dataSync()));
    const rounded = (x: number) => bf16BitsToFloat32(float32ToBf16Bits(x));
    const matrices = [...base.params.values()].filter((w) => w.rank >= 2);
    const vectors = [...base.params.values()].filter((w) => w.rank < 2);
    const original = new Map([...base.params].map(([n, w]) => [n, w.dataSync().slice()]));
    // With matrices whose values bfloat16 holds exactly, holding them in bfloat16 changes no logit.
    for (const w of matrices) w.assign(tf.tensor(Float32Array.from(w.dataSync(), rounded), w.shape));
    const before = logits(base);
    const lora = base.withLora({ ...DEFAULT_LORA, r: 4, alpha: 8, targetModules: "all-linear" }, RngStream.fromSeed(1, "lora"));
    // Storing again frees nothing: withAdapter did it, and nothing else held the float32 values.
    expect(storeInBf16(matrices)).toBe(0);
    for (const [n, w] of base.params) {
      const got = w.dataSync();
      const want = original.get(n)!;
      for (let i = 0; i < want.length; i += 7) expect(got[i]).toBe(w.rank >= 2 ? rounded(want[i]!) : want[i]);
    }
    expect(vectors.length).toBeGreaterThan(0);
    expect(logits(lora)).toEqual(before);
    const opt = new AdamW(lora.params, { lr: 1e-2, weightDecay: 0 });
    const batch = buildScoringBatch([{ promptIds: [3, 17], completionIds: [42, 5, 99, 7] }], 0);
    const nll: number[] = [];
    for (let s = 0; s < 5; s++) {
      const { value, grads } = tf.variableGrads(() => {
        const { tokens, sums } = completionLogProbs(lora, batch);
        tokens.dispose();
        return tf.neg(tf.mean(sums)) as tf.Scalar;
      }, lora.trainableVariables());
      opt.step(lora.gradsByWeightName(grads));
      nll.push(value.dataSync()[0]!);
      tf.dispose([value, ...Object.values(grads)]);
    }
    expect(nll[4]!).toBeLessThan(nll[0]! - 0.1);
    opt.dispose();
    lora.dispose();
    base.dispose();
    // As loaded, nothing else holds a weight's float32 values: storing them in bfloat16 frees them all.
    const fresh = (await loadPretrained(path.join(FIXTURES, "tiny-llama"))).model;
    const freshMatrices = [...fresh.params.values()].filter((w) => w.rank >= 2);
    expect(storeInBf16(freshMatrices)).toBe(freshMatrices.reduce((n, w) => n + 4 * w.size, 0));
    fresh.dispose();
  });

  it("in float32 a LoRA base keeps its float32 values", async () => {
    await useBackend("libtorch");
    const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
    const w = p.model.params.get("model.layers.0.self_attn.q_proj.weight")!;
    const want = w.dataSync().slice();
    const lora = p.model.withLora({ ...DEFAULT_LORA, r: 4, alpha: 8 }, RngStream.fromSeed(1, "lora"));
    expect(w.dataSync()).toEqual(want);
    expect(storeInBf16([w])).toBe(0);
    lora.dispose();
    p.model.dispose();
  });
});

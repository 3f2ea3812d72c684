// bf16 on libtorch keeps a linear layer's output in bfloat16, as torch.autocast does, while tfjs
// sees float32: these tests read the values back and check which precision each result has. A
// float32 value is exactly a bfloat16 one when its low 16 bits are zero.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AdamW, loadLibtorchAddon, nativeThreads, setComputePrecision, tf, useBackend } from "../src/index.js";
import { fusedAttention, logSoftmaxSelect, logSoftmaxSelectGrad, rmsNorm, rotary, swiglu } from "../src/fused-ops.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

/** The values rounded to bfloat16 (to nearest, ties to even), as float32. */
function toBf16(values: Float32Array): Float32Array {
  const out = Float32Array.from(values);
  const bits = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) bits[i] = ((bits[i]! + 0x7fff + ((bits[i]! >>> 16) & 1)) & 0xffff0000) >>> 0;
  return out;
}

/** How many of the values are exactly representable in bfloat16. */
function bf16Exact(values: Float32Array): number {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  return bits.filter((b) => (b & 0xffff) === 0).length;
}

afterEach(async () => {
  if (tf.getBackend() === "libtorch") setComputePrecision("float32");
  await useBackend((process.env["PBRL_BACKEND"] ?? "wasm") as "wasm");
});

/** How bf16 products run: ATen's bfloat16 GEMM, or float32 over the widened operands (CPUs without AVX512-BF16/AMX). */
type Bf16Gemm = "bfloat16" | "float32";
const gemmControl = (): { setBf16Gemm(mode: Bf16Gemm | "auto"): void; bf16Gemm(): Bf16Gemm } =>
  (load as { addon: { setBf16Gemm(mode: Bf16Gemm | "auto"): void; bf16Gemm(): Bf16Gemm } }).addon;

// Every test under both ways of computing a bf16 product, whatever this CPU would choose.
describe.skipIf(missing !== undefined).each<Bf16Gemm>(["bfloat16", "float32"])(
  `bf16 activations on libtorch, %s GEMMs${missing !== undefined ? ` (skipped: ${missing})` : ""}`,
  (gemm) => {
    beforeAll(() => {
      gemmControl().setBf16Gemm(gemm);
      expect(gemmControl().bf16Gemm()).toBe(gemm);
    });
    afterAll(() => gemmControl().setBf16Gemm("auto"));

    it("a product with a weight is a bfloat16 activation; the ops after it compute in float32", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const w = tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 1));
      const x1 = tf.randomNormal([16, 32], 0, 1, "float32", 2);
      const x2 = tf.randomNormal([16, 32], 0, 1, "float32", 3);
      const y1 = tf.matMul(x1, w, false, true);
      const y2 = tf.matMul(x2, w, false, true);
      expect(y1.dtype).toBe("float32");
      const [v1, v2] = [y1.dataSync() as Float32Array, y2.dataSync() as Float32Array];
      expect(bf16Exact(v1)).toBe(v1.length);

      // Elementwise ops and reductions compute in float32 on their inputs' values: the sum of two
      // activations (as autograd sums the gradients of a tensor used twice) is not rounded to bf16.
      const sum = tf.add(y1, y2).dataSync() as Float32Array;
      for (let i = 0; i < sum.length; i++) expect(sum[i]).toBe(Math.fround(v1[i]! + v2[i]!));
      expect(bf16Exact(sum)).toBeLessThan(sum.length / 2);
      const total = tf.sum(y1).dataSync()[0]!;
      expect(total).toBeCloseTo(
        v1.reduce((s, v) => s + v, 0),
        2,
      );
      // The activation is bfloat16 storage: a product it meets next casts nothing, while a product
      // without a weight operand is float32 and is cast there. So is a weight's new value after an assign.
      const addon = (load as { addon: { info(): { bf16Casts: number } } }).addon;
      const next = tf.matMul(y1, w).dataSync(); // [16, 64] · [64, 32]: w's copy exists
      const casts = addon.info().bf16Casts;
      tf.matMul(y1, w).dispose();
      expect(addon.info().bf16Casts).toBe(casts);
      const plain = tf.matMul(x1, x2, false, true); // no weight operand: float32
      tf.matMul(plain, x1).dispose();
      expect(addon.info().bf16Casts).toBe(casts + 1); // plain (x1 kept its copy from y1's product)
      w.assign(tf.mul(w, 2));
      const before = addon.info().bf16Casts;
      const y3 = tf.matMul(x1, w, false, true);
      expect(addon.info().bf16Casts).toBe(before + 1); // w's new value
      tf.matMul(y3, w).dispose();
      expect(addon.info().bf16Casts).toBe(before + 1); // y3 is bfloat16 already
      expect(next.length).toBe(16 * 32);
      tf.dispose([w, x1, x2, y1, y2, plain, y3]);
    });

    it("after an AdamW step the products read the updated weight's bfloat16 copy", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const w = tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 1));
      const x = tf.randomNormal([16, 32], 0, 1, "float32", 2);
      const before = tf.matMul(x, w, false, true).dataSync();
      const opt = new AdamW(new Map([["w", w]]), { lr: 0.1, weightDecay: 0 });
      const g = tf.randomNormal([64, 32], 0, 1, "float32", 3);
      opt.step(new Map([["w", g]]));
      const after = tf.matMul(x, w, false, true).dataSync();
      // The same product from a float32 tensor that is not a weight (cast on the spot).
      const copy = tf.add(w, 0);
      const fresh = tf.matMul(x, copy, false, true).dataSync();
      expect(Array.from(after)).toEqual(Array.from(fresh));
      expect(Array.from(after)).not.toEqual(Array.from(before));
      opt.dispose();
      tf.dispose([w, x, g, copy]);
    });

    it("AdamW makes its weights' bfloat16 copies with its moments, before any product (none in float32)", async () => {
      await useBackend("libtorch");
      const addon = (load as { addon: { info(): { bf16Casts: number } } }).addon;
      const weights = new Map<string, tf.Variable>([
        ["w", tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 4))],
        ["norm", tf.variable(tf.ones([32]))], // a vector meets no product: no copy
        ["frozen", tf.variable(tf.randomNormal([8, 32], 0, 1, "float32", 5), false)],
      ]);
      let casts = addon.info().bf16Casts;
      new AdamW(weights, { lr: 0.1 }).dispose();
      expect(addon.info().bf16Casts).toBe(casts); // float32: nothing to copy
      setComputePrecision("bf16");
      const opt = new AdamW(weights, { lr: 0.1 });
      expect(addon.info().bf16Casts).toBe(casts + 1); // w only
      casts = addon.info().bf16Casts;
      const x = tf.randomNormal([16, 32], 0, 1, "float32", 6);
      tf.matMul(x, weights.get("w")!, false, true).dispose();
      expect(addon.info().bf16Casts).toBe(casts + 1); // x, not w
      opt.dispose();
      tf.dispose([x, ...weights.values()]);
    });

    it("bfloat16 logits: log-probabilities and their gradient as from the same logits in float32", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const w = tf.variable(tf.randomNormal([1000, 32], 0, 1, "float32", 4));
      const h = tf.randomNormal([6, 32], 0, 1, "float32", 5);
      const targets = Int32Array.from([3, 999, 0, 500, 7, 3]);
      const head = (): tf.Tensor2D => tf.matMul(h, w, false, true); // a bfloat16 activation
      // The same values as a float32 tensor (an elementwise op widens them), down the float32 loops.
      const wide = (): tf.Tensor2D => tf.mul(head(), 1);
      const run = (logits: () => tf.Tensor2D): { value: Float32Array; grad: Float32Array } => {
        const x = logits();
        const { value, lse } = logSoftmaxSelect(x, targets);
        const grad = logSoftmaxSelectGrad(x, lse, targets, tf.tensor1d([1, 2, 3, 4, 5, 6])).dataSync() as Float32Array;
        return { value: value.dataSync() as Float32Array, grad };
      };
      const half = run(head);
      const full = run(wide);
      expect(Array.from(half.value)).toEqual(Array.from(full.value));
      // The gradient is rounded to bfloat16 once (relative 2⁻⁸ per element).
      expect(bf16Exact(half.grad)).toBe(half.grad.length);
      for (let i = 0; i < full.grad.length; i++) expect(Math.abs(half.grad[i]! - full.grad[i]!)).toBeLessThanOrEqual(Math.abs(full.grad[i]!) / 256 + 1e-30);
      tf.dispose([w, h]);
    });

    it("a clone or reshape of a product operand shares its bfloat16 copy (tfjs clones the tensors it saves for the backward pass)", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const addon = (load as { addon: { info(): { bf16Casts: number } } }).addon;
      const w = tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 1));
      const x = tf.randomNormal([2, 8, 32], 0, 1, "float32", 2);
      const flat = x.reshape([16, 32]);
      const y = tf.matMul(flat, w, false, true).dataSync();
      const casts = addon.info().bf16Casts;
      const again = tf.matMul(tf.clone(flat), tf.clone(w), false, true).dataSync();
      const viaReshape = tf.matMul(flat.reshape([2, 8, 32]).reshape([16, 32]), w, false, true).dataSync();
      expect(addon.info().bf16Casts).toBe(casts);
      expect(Array.from(again)).toEqual(Array.from(y));
      expect(Array.from(viaReshape)).toEqual(Array.from(y));
      // A tensor of new values is cast once.
      tf.matMul(tf.add(flat, 1), w, false, true).dispose();
      expect(addon.info().bf16Casts).toBe(casts + 1);
      tf.dispose([w, x, flat]);
    });

    it("a large float32 result (a tied embedding's weight gradient), made a block of rows at a time, equals the whole product widened", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      // [4200, 96] · [96, 1024]: 4.3M elements, past the size where the result is made in blocks.
      const a = tf.randomNormal([96, 4200], 0, 1, "float32", 6);
      const b = tf.randomNormal([96, 1024], 0, 1, "float32", 7);
      const blocks = tf.matMul(a, b, true, false).dataSync() as Float32Array; // no weight operand: float32 out
      expect(blocks.length).toBe(4200 * 1024);
      expect(bf16Exact(blocks)).toBe(blocks.length); // bfloat16 products, widened
      // The reference: the float32 product of the operands rounded to bfloat16, as oneDNN reads them.
      setComputePrecision("float32");
      const round = (t: tf.Tensor): tf.Tensor => tf.tensor(toBf16(t.dataSync() as Float32Array), t.shape);
      const exact = tf.matMul(round(a), round(b), true, false).dataSync() as Float32Array;
      for (let i = 0; i < exact.length; i += 37) expect(Math.abs(blocks[i]! - exact[i]!)).toBeLessThanOrEqual(Math.abs(exact[i]!) / 128 + 1e-6);
      tf.dispose([a, b]);
    });

    it("SwiGLU of bfloat16 projections and its gradient: bfloat16, each value the float32 one rounded once", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const wg = tf.variable(tf.randomNormal([3000, 32], 0, 1, "float32", 8));
      const wu = tf.variable(tf.randomNormal([3000, 32], 0, 1, "float32", 11));
      const x = tf.randomNormal([8, 32], 0, 1, "float32", 9);
      const dyOf = tf.variable(tf.randomNormal([3000, 32], 0, 1, "float32", 10));
      // gate, up and dy as a bf16 step has them: outputs of products with a weight.
      const [gate, up] = [tf.matMul(x, wg, false, true), tf.matMul(x, wu, false, true)];
      const dy = tf.matMul(x, dyOf, false, true);
      const grads = (g: tf.Tensor, u: tf.Tensor, d: tf.Tensor): Float32Array[] =>
        tf
          .grads((a: tf.Tensor, b: tf.Tensor) => swiglu(a, b))([g, u], d)
          .map((t) => t.dataSync() as Float32Array);
      const value = (g: tf.Tensor, u: tf.Tensor): Float32Array => swiglu(g, u).dataSync() as Float32Array;
      const half = [value(gate, up), ...grads(gate, up, dy)];
      // The same values widened to float32 tensors (an elementwise op widens): the float32 loop.
      const full = [value(tf.mul(gate, 1), tf.mul(up, 1)), ...grads(tf.mul(gate, 1), tf.mul(up, 1), tf.mul(dy, 1))];
      for (const [h, f] of half.map((v, i) => [v, full[i]!] as const)) {
        expect(bf16Exact(h)).toBe(h.length);
        for (let i = 0; i < f.length; i++) expect(Math.abs(h[i]! - f[i]!)).toBeLessThanOrEqual(Math.abs(f[i]!) / 256 + 1e-30);
      }
      tf.dispose([wg, wu, x, dyOf]);
    });

    it("RMSNorm computes in float32 and hands the next products its output's bfloat16 copy (no cast of its own)", async () => {
      await useBackend("libtorch");
      const addon = (load as { addon: { info(): { bf16Casts: number } } }).addon;
      const x = tf.randomNormal([24, 96], 0, 1, "float32", 16) as tf.Tensor2D;
      const g = tf.variable(tf.randomUniform([96], 0.5, 1.5, "float32", 17)) as tf.Variable<tf.Rank.R1>;
      const w = tf.variable(tf.randomNormal([40, 96], 0, 1, "float32", 18));
      const full = rmsNorm(x, g, 1e-6);
      const fullValues = full.dataSync() as Float32Array;
      const fullProduct = tf.matMul(full, tf.tensor(toBf16(w.dataSync() as Float32Array), w.shape), false, true).dataSync() as Float32Array;
      setComputePrecision("bf16");
      const y = rmsNorm(x, g, 1e-6);
      tf.matMul(w, w, false, true).dispose(); // the weight's own copy, made once
      const casts = addon.info().bf16Casts;
      const product = tf.matMul(y, w, false, true).dataSync() as Float32Array;
      expect(addon.info().bf16Casts).toBe(casts); // y came with its copy
      expect(Array.from(y.dataSync())).toEqual(Array.from(fullValues)); // the same float32 values as without bf16
      // The product of the bf16-rounded operands, within bfloat16 rounding of its output.
      for (let i = 0; i < product.length; i++) expect(Math.abs(product[i]! - fullProduct[i]!)).toBeLessThanOrEqual(Math.abs(fullProduct[i]!) / 64 + 0.05);
      tf.dispose([x, g, w, full, y]);
    });

    it("rotary embedding of a bfloat16 projection (heads transposed, as the models do), and its gradient: bfloat16, rounded once", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const [b, t, h, d] = [2, 5, 3, 8];
      const w = tf.variable(tf.randomNormal([h * d, 16], 0, 1, "float32", 12));
      const x = tf.randomNormal([b * t, 16], 0, 1, "float32", 13);
      const cos = tf.cos(tf.randomUniform([b, 1, t, d], 0, 6, "float32", 14)) as tf.Tensor4D;
      const sin = tf.sin(tf.randomUniform([b, 1, t, d], 0, 6, "float32", 14)) as tf.Tensor4D;
      const dy = tf.randomNormal([b, h, t, d], 0, 1, "float32", 15) as tf.Tensor4D;
      const heads = (q: tf.Tensor): tf.Tensor4D => tf.transpose(tf.reshape(q, [b, t, h, d]), [0, 2, 1, 3]);
      const run = (q: tf.Tensor): Float32Array[] => {
        const { value, grads } = tf.valueAndGrads((a: tf.Tensor) => rotary(heads(a), cos, sin))([q], dy);
        return [value.dataSync() as Float32Array, grads[0]!.dataSync() as Float32Array];
      };
      const q = tf.matMul(x, w, false, true); // a bfloat16 activation
      const [y, dq] = run(q);
      const [yFull, dqFull] = run(tf.mul(q, 1)); // the same values as float32
      expect(bf16Exact(y!)).toBe(y!.length);
      for (let i = 0; i < y!.length; i++) expect(Math.abs(y![i]! - yFull![i]!)).toBeLessThanOrEqual(Math.abs(yFull![i]!) / 256 + 1e-30);
      for (let i = 0; i < dq!.length; i++) expect(Math.abs(dq![i]! - dqFull![i]!)).toBeLessThanOrEqual(Math.abs(dqFull![i]!) / 64 + 1e-6);
      tf.dispose([w, x, cos, sin, dy, q]);
    });

    it("attention in bfloat16: within bfloat16 rounding of the float32 kernel on the same bf16-rounded inputs, padding included; the backward pass reuses the probabilities' copy", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const addon = (load as { addon: { info(): { bf16Casts: number } } }).addon;
      // Grouped heads, a cache, and row 1 padded past its first queries (they see no key: a uniform row).
      const [b, h, kv, t, past, d] = [2, 4, 2, 40, 3, 16];
      const s = past + t;
      const mask = new Int32Array(b * s).fill(1);
      for (let j = 0; j < 12; j++) mask[s + j] = 0;
      const keyMask = tf.tensor2d(mask, [b, s], "int32");
      const round = (t: tf.Tensor): tf.Tensor => tf.tensor(toBf16(t.dataSync() as Float32Array), t.shape);
      const [q, k, v] = [
        [b, h, t, d],
        [b, kv, s, d],
        [b, kv, s, d],
      ].map((shape, i) => round(tf.mul(tf.randomNormal(shape, 0, 1, "float32", 20 + i), 1.5)));
      const dy = round(tf.randomNormal([b, t, h, d], 0, 1, "float32", 23));
      const run = (): Float32Array[] => {
        const { value, grads } = tf.valueAndGrads((qi: tf.Tensor, ki: tf.Tensor, vi: tf.Tensor) =>
          fusedAttention(qi as tf.Tensor4D, ki as tf.Tensor4D, vi as tf.Tensor4D, keyMask, 1 / Math.sqrt(d)),
        )([q!, k!, v!], dy as tf.Tensor4D);
        return [value, ...grads].map((x) => x.dataSync() as Float32Array);
      };
      const casts = addon.info().bf16Casts;
      const half = run();
      expect(addon.info().bf16Casts).toBe(casts); // the forward pass wrote the probabilities' bf16 copy
      expect(bf16Exact(half[0]!)).toBe(half[0]!.length); // out is an activation for the output projection
      setComputePrecision("float32");
      const full = run();
      for (const [x, ref] of half.map((values, i) => [values, full[i]!] as const)) {
        const scale = ref.reduce((m, r) => Math.max(m, Math.abs(r)), 0);
        // scores, probabilities and dp rounded to bf16 once each: errors of a few bf16 ulps of the largest value.
        for (let i = 0; i < ref.length; i++) expect(Math.abs(x[i]! - ref[i]!)).toBeLessThanOrEqual(scale / 64);
        const meanError = ref.reduce((sum, r, i) => sum + Math.abs(x[i]! - r), 0) / ref.length;
        expect(meanError).toBeLessThanOrEqual(scale / 500);
      }
      tf.dispose([keyMask, q!, k!, v!, dy]);
    });

    it("the other GEMM gives the same products up to float32 summation order, a vocabulary-sized weight (widened in blocks) included", async () => {
      await useBackend("libtorch");
      setComputePrecision("bf16");
      const other: Bf16Gemm = gemm === "bfloat16" ? "float32" : "bfloat16";
      // [20000, 900]: 18M elements, past the size the float32 path widens a block of columns at a time.
      const cases: [tf.Tensor, tf.Variable][] = [
        [tf.randomNormal([8, 900], 0, 1, "float32", 12), tf.variable(tf.randomNormal([20000, 900], 0, 1, "float32", 13))],
        [tf.randomNormal([24, 64], 0, 1, "float32", 14), tf.variable(tf.randomNormal([48, 64], 0, 1, "float32", 15))],
      ];
      for (const [x, w] of cases) {
        const mine = tf.matMul(x, w, false, true).dataSync() as Float32Array;
        const grad = tf.matMul(x, x, true, false).dataSync() as Float32Array; // no weight operand: float32 of bf16 values
        gemmControl().setBf16Gemm(other);
        const theirs = tf.matMul(x, w, false, true).dataSync() as Float32Array;
        const theirGrad = tf.matMul(x, x, true, false).dataSync() as Float32Array;
        gemmControl().setBf16Gemm(gemm);
        expect(bf16Exact(mine)).toBe(mine.length);
        expect(bf16Exact(grad)).toBe(grad.length);
        // Both sum the same bfloat16 operands in float32; their orders differ, then each rounds once to
        // bfloat16: at most one bfloat16 step apart (2⁻⁷ relative; near zero, where terms of size ~1
        // cancel, float32 rounding of the order, ~1e-5), and most values equal.
        let equal = 0;
        for (let i = 0; i < mine.length; i++) {
          expect(Math.abs(mine[i]! - theirs[i]!)).toBeLessThanOrEqual(Math.abs(theirs[i]!) / 128 + 1e-4);
          if (mine[i] === theirs[i]) equal++;
        }
        expect(equal).toBeGreaterThan(mine.length * 0.9);
        for (let i = 0; i < grad.length; i++) expect(Math.abs(grad[i]! - theirGrad[i]!)).toBeLessThanOrEqual(Math.abs(theirGrad[i]!) / 128 + 1e-4);
        tf.dispose([x, w]);
      }
    }, 400_000);

    it("float32 keeps every result in float32", async () => {
      await useBackend("libtorch");
      const w = tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 1));
      const y = tf.matMul(tf.randomNormal([16, 32], 0, 1, "float32", 2), w, false, true).dataSync() as Float32Array;
      expect(bf16Exact(y)).toBeLessThan(y.length / 4);
      w.dispose();
    });
  },
);

describe.skipIf(missing !== undefined)(`the libtorch addon's own parallel loops${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it("are compiled with OpenMP when ATen parallelises with OpenMP (one thread pool with ATen's; else they run on one thread)", () => {
    const info = (load as { info: { openmp: boolean; atenOpenmp: boolean } }).info;
    expect(info.openmp).toBe(info.atenOpenmp);
  });
});

// bf16 on libtorch keeps a linear layer's output in bfloat16, as torch.autocast does, while tfjs
// sees float32: these tests read the values back and check which precision each result has. A
// float32 value is exactly a bfloat16 one when its low 16 bits are zero.
import { afterEach, describe, expect, it } from "vitest";
import { AdamW, loadLibtorchAddon, nativeThreads, setComputePrecision, tf, useBackend } from "../src/index.js";
import { logSoftmaxSelect, logSoftmaxSelectGrad } from "../src/fused-ops.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

/** How many of the values are exactly representable in bfloat16. */
function bf16Exact(values: Float32Array): number {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  return bits.filter((b) => (b & 0xffff) === 0).length;
}

afterEach(async () => {
  if (tf.getBackend() === "libtorch") setComputePrecision("float32");
  await useBackend((process.env["PBRL_BACKEND"] ?? "wasm") as "wasm");
});

describe.skipIf(missing !== undefined)(`bf16 activations on libtorch${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
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
    tf.dispose([w, x1, x2, y1, y2]);
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

  it("float32 keeps every result in float32", async () => {
    await useBackend("libtorch");
    const w = tf.variable(tf.randomNormal([64, 32], 0, 1, "float32", 1));
    const y = tf.matMul(tf.randomNormal([16, 32], 0, 1, "float32", 2), w, false, true).dataSync() as Float32Array;
    expect(bf16Exact(y)).toBeLessThan(y.length / 4);
    w.dispose();
  });
});

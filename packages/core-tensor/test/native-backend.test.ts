// The `native` backend against the pure-JS `cpu` reference: every kernel the addon replaces
// (matrix products in all transpose and broadcast forms, fused bias/activation, transposes, unary
// ops), gradients through them, the addon's own bounds checks, and the fallback to wasm.
//
// The kernel tests need the built addon (`pnpm install` builds it; `node native/build.mjs` by
// hand). They skip, naming why, only when it is not built; with PBRL_REQUIRE_NATIVE=1 (set by
// .ci/run when OpenBLAS is installed) a missing addon fails instead, so CI cannot silently lose
// the native path.
import { afterEach, describe, expect, it } from "vitest";
import { blasCoreType, BackendUnavailableError, currentBackend, FUSED_KERNEL_NAMES, loadNativeAddon, fusedAttention, logSoftmaxSelect, logSoftmaxSelectGrad, NATIVE_KERNELS, scatterAddRows, decodeWeightOffsets, NativeDecodeCache, nativeDecodeStep, rmsNorm, rotary, swiglu, adamwStep, tf, useBackend, useDefaultBackend, type BackendName } from "../src/index.js";

const coreTypeBefore = process.env["OPENBLAS_CORETYPE"];
const load = loadNativeAddon();
const unavailable = load.ok ? undefined : load.reason;
const required = process.env["PBRL_REQUIRE_NATIVE"] === "1";

/** Deterministic values in [-1, 1) (a small LCG), so failures reproduce. */
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

function rand(shape: number[], seed: number): tf.Tensor {
  return tf.tensor(values(shape.reduce((a, b) => a * b, 1), seed), shape);
}

/** Runs `f` on a backend and returns its outputs' shapes and values (tensors created inside). */
async function on(backend: BackendName, f: () => tf.Tensor | tf.Tensor[]): Promise<{ shape: number[]; data: Float32Array | Int32Array }[]> {
  await useBackend(backend);
  const before = tf.memory().numTensors;
  const outs = tf.tidy(f);
  const list = Array.isArray(outs) ? outs : [outs];
  const result = list.map((t) => ({ shape: t.shape.slice(), data: t.dataSync() as Float32Array | Int32Array }));
  tf.dispose(list);
  expect(tf.memory().numTensors).toBe(before);
  return result;
}

/**
 * `f` on native against `reference` (default `f`) on cpu: max |native - cpu| ≤ tol × max(1, max |cpu|),
 * i.e. float32 sums in another order and nothing more; non-finite values must match exactly.
 */
async function expectSame(f: () => tf.Tensor | tf.Tensor[], tol = 1e-5, reference = f): Promise<void> {
  const ref = await on("cpu", reference);
  const got = await on("native", f);
  expect(got.length).toBe(ref.length);
  got.forEach((g, i) => {
    const r = ref[i]!;
    expect(g.shape).toEqual(r.shape);
    let scale = 1;
    let diff = 0;
    for (let j = 0; j < r.data.length; j++) {
      const a = g.data[j]!;
      const b = r.data[j]!;
      if (Number.isNaN(b) || !Number.isFinite(b)) {
        expect(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))).toBe(true);
        continue;
      }
      scale = Math.max(scale, Math.abs(b));
      diff = Math.max(diff, Math.abs(a - b));
    }
    expect(diff).toBeLessThanOrEqual(tol * scale);
  });
}

function expectClose(got: number[], want: number[], tol = 1e-5): void {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(Math.abs(g - want[i]!)).toBeLessThanOrEqual(tol * Math.max(1, Math.abs(want[i]!))));
}

describe.skipIf(unavailable !== undefined && !required)(`native backend kernels vs cpu${unavailable !== undefined ? ` (skipped: ${unavailable})` : ""}`, () => {
  afterEach(async () => {
    await useBackend("wasm");
  });

  it("is available, says so, and replaces the heavy kernels with the addon's", async () => {
    expect(unavailable).toBeUndefined();
    const info = await useBackend("native");
    expect(info.name).toBe("native");
    expect(tf.getBackend()).toBe("native");
    expect(info.description).toMatch(/^tensor backend: native \(OpenBLAS sgemm, \w+ kernels, \d+ threads?, on the wasm heap(; OPENBLAS_CORETYPE=\w+ is not applied, set PBRL_BLAS_CORETYPE to choose)?\)/);
    for (const name of Object.keys(NATIVE_KERNELS)) {
      expect(tf.getKernel(name, "native")?.kernelFunc).toBeDefined();
      expect(tf.getKernel(name, "native")!.kernelFunc).not.toBe(tf.getKernel(name, "wasm")!.kernelFunc);
    }
    // every other wasm kernel is there too, so nothing falls back to another backend; plus the
    // kernels of pbrl's fused ops (src/fused-ops.ts)
    expect(FUSED_KERNEL_NAMES).toEqual(["PbrlLogSoftmaxGrad", "PbrlLogSoftmaxSelect", "PbrlScatterAddRows", "PbrlRmsNorm", "PbrlRmsNormGrad", "PbrlSwiglu", "PbrlSwigluGrad", "PbrlRope", "PbrlAttention", "PbrlAttentionGrad", "PbrlAdamW"]);
    expect(tf.getKernelsForBackend("native").length).toBe(tf.getKernelsForBackend("wasm").length + FUSED_KERNEL_NAMES.length);
    for (const name of FUSED_KERNEL_NAMES) expect(tf.getKernel(name, "native"), name).toBeDefined();
  });

  it("matMul: 2-D, all transpose combinations, odd and degenerate sizes", async () => {
    for (const [m, k, n] of [
      [1, 1, 1],
      [3, 5, 7],
      [17, 64, 33],
      [128, 256, 96],
      [1, 300, 8000], // one row: sgemv
      [5, 7, 1], // one column: sgemv
      [300, 64, 1],
    ] as const) {
      for (const ta of [false, true]) {
        for (const tb of [false, true]) {
          await expectSame(() => tf.matMul(rand(ta ? [k, m] : [m, k], m + k), rand(tb ? [n, k] : [k, n], n * 7 + 1), ta, tb));
        }
      }
    }
    await expectSame(() => tf.matMul(tf.zeros([4, 0]), tf.zeros([0, 3]))); // K = 0: zeros
    await expectSame(() => tf.matMul(tf.zeros([0, 5]), rand([5, 3], 2)));
  });

  it("matMul: batched, with every broadcast of the batch dimensions", async () => {
    const cases: [number[], number[], boolean, boolean][] = [
      [[4, 8, 16], [4, 16, 8], false, false],
      [[4, 16, 8], [4, 16, 8], true, false],
      [[2, 3, 8, 16], [2, 3, 12, 16], false, true], // attention scores q·kᵀ
      [[2, 3, 16, 8], [2, 3, 12, 16], true, true],
      [[5, 8, 16], [16, 12], false, false], // one shared right matrix
      [[5, 16, 8], [16, 12], true, false],
      [[8, 16], [5, 16, 12], false, false], // one shared left matrix
      [[1, 8, 16], [5, 16, 12], false, false],
      [[2, 1, 8, 16], [1, 3, 16, 12], false, false], // both broadcast
      [[3, 1, 8, 16], [4, 16, 12], false, false],
      [[64, 1, 32], [64, 32, 40], false, false], // many small products (pool path), each one row
      [[3, 32, 9], [3, 32, 1], true, false], // one column each
    ];
    for (const [as, bs, ta, tb] of cases) {
      const a = (): tf.Tensor => rand(as, as.length * 13);
      const b = (): tf.Tensor => rand(bs, bs.length * 17);
      // The reference broadcasts explicitly first: tfjs's own cpu and wasm kernels index a
      // broadcast batch modulo its size, which is wrong when both sides broadcast ([2,1] · [1,3]).
      const outer = tf.broadcast_util.assertAndGetBroadcastShape(as.slice(0, -2), bs.slice(0, -2));
      const full = (t: tf.Tensor): tf.Tensor => tf.broadcastTo(t, [...outer, ...t.shape.slice(-2)]);
      await expectSame(() => tf.matMul(a(), b(), ta, tb), 1e-5, () => tf.matMul(full(a()), full(b()), ta, tb));
    }
  });

  it("fused matMul: bias (per column and scalar) and each activation the addon implements", async () => {
    const a = (): tf.Tensor2D => rand([9, 24], 3) as tf.Tensor2D;
    const b = (): tf.Tensor2D => rand([24, 10], 4) as tf.Tensor2D;
    for (const activation of ["linear", "relu", "relu6", "sigmoid", "elu", "leakyrelu"] as const) {
      await expectSame(() => tf.fused.matMul({ a: a(), b: b(), bias: rand([10], 5), activation, leakyreluAlpha: 0.2 }));
      await expectSame(() => tf.fused.matMul({ a: a(), b: b(), bias: tf.scalar(0.3).reshape([1]), activation, leakyreluAlpha: 0.2 }));
      await expectSame(() => tf.fused.matMul({ a: rand([24, 9], 3) as tf.Tensor2D, b: rand([10, 24], 4) as tf.Tensor2D, transposeA: true, transposeB: true, activation }));
    }
    // prelu (weights as an input) is not in the addon: the wasm kernel runs, with the same result
    await expectSame(() => tf.fused.matMul({ a: a(), b: b(), activation: "prelu", preluActivationWeights: rand([10], 6) }));
  });

  it("transpose: 2-D to 5-D permutations, float32 and int32, size-1 axes", async () => {
    const cases: [number[], number[]][] = [
      [[7, 13], [1, 0]],
      [[300, 200], [1, 0]],
      [[2, 8, 16, 32], [0, 2, 1, 3]], // heads ↔ positions, as attention does
      [[2, 16, 8, 32], [0, 2, 3, 1]],
      [[3, 4, 5], [2, 0, 1]],
      [[3, 4, 5], [1, 2, 0]],
      [[2, 3, 4, 5, 6], [4, 2, 0, 3, 1]],
      [[1, 6, 1, 9], [3, 1, 2, 0]],
      [[4, 1, 6], [1, 0, 2]], // identity once the size-1 axis is dropped
    ];
    for (const [shape, perm] of cases) {
      await expectSame(() => tf.transpose(rand(shape, shape.length), perm), 0);
      await expectSame(() => tf.transpose(tf.cast(tf.mul(rand(shape, 9), 1000), "int32"), perm), 0);
    }
  });

  it("exp: values, overflow, underflow, ±Infinity and NaN", async () => {
    await expectSame(() => tf.exp(tf.mul(rand([100_000], 11), 90)), 2e-6); // large: the threaded path
    await expectSame(() => tf.exp(tf.tensor1d([0, 1, -1, 88, 88.8, 89, -87, -88, -104, -200, Infinity, -Infinity, NaN, 1e-8])), 2e-6);
    await expectSame(() => tf.softmax(tf.mul(rand([8, 8000], 12), 20)), 2e-6);
  });

  it("unary ops: sigmoid, sqrt, rsqrt, reciprocal, on small and large (threaded) inputs and edge values", async () => {
    const edges = [0, 1, -1, 1e-30, 4, 100, -100, 1e30, Infinity, -Infinity, NaN];
    for (const op of [tf.sigmoid, tf.sqrt, tf.rsqrt, tf.reciprocal] as ((x: tf.Tensor) => tf.Tensor)[]) {
      await expectSame(() => op(tf.mul(rand([70_001], 41), 30)), 2e-6);
      await expectSame(() => op(tf.abs(rand([3, 5], 42))), 2e-6);
      await expectSame(() => op(tf.tensor1d(edges)), 2e-6);
    }
  });

  it("slice, split and concat: every axis, float32, int32 and bool, odd sizes", async () => {
    const x = (): tf.Tensor => rand([3, 4, 5, 6], 51);
    const ints = (): tf.Tensor => tf.cast(tf.mul(x(), 100), "int32");
    const bools = (): tf.Tensor => tf.greater(x(), 0);
    for (const make of [x, ints, bools]) {
      for (let axis = 0; axis < 4; axis++) {
        const begin = [0, 0, 0, 0];
        const size = [-1, -1, -1, -1];
        begin[axis] = 1;
        size[axis] = 2;
        await expectSame(() => tf.slice(make(), begin, size), 0);
        await expectSame(() => tf.split(make(), axis === 0 ? 3 : [1, 2, make().shape[axis]! - 3], axis), 0);
        await expectSame(() => tf.concat([make(), tf.slice(make(), begin, size), make()], axis), 0);
      }
      await expectSame(() => tf.slice(make(), [1, 1, 0, 2], [1, 2, 5, 3]), 0); // several cut axes: the wasm kernel
      await expectSame(() => tf.concat([make(), tf.zeros(make().shape, make().dtype).slice([0, 0, 0, 0], [3, 4, 5, 0])], 3), 0); // an empty input
    }
    await expectSame(() => tf.slice(rand([8, 4, 128, 64], 52), [0, 0, 0, 32], [-1, -1, -1, 32]), 0); // the rotary half
  });

  it("identity (tfjs's copy of every tensor a gradient saves) shares the data instead of copying it", async () => {
    await useBackend("native");
    const x = rand([64, 32], 55);
    const expected = x.dataSync().slice();
    const buffers = tf.memory().numDataBuffers;
    const y = tf.clone(x);
    expect(tf.memory().numDataBuffers).toBe(buffers);
    x.dispose();
    expect(y.dataSync()).toEqual(expected); // still alive: the data is freed with its last tensor
    y.dispose();
    await expectSame(() => tf.clone(rand([3, 5], 56)), 0);
    // saved tensors of a gradient: the same values as through cpu's identity
    await expectSame(() => tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.exp(v), v)))(rand([4, 6], 57)), 1e-6);
  });

  it("gather: rows of float32, int32 and bool along each axis, n-D indices, repeats; out-of-range indices throw", async () => {
    const x = (): tf.Tensor => rand([5, 6, 7], 58);
    const ints = (): tf.Tensor => tf.cast(tf.mul(x(), 100), "int32");
    const bools = (): tf.Tensor => tf.greater(x(), 0);
    for (const make of [x, ints, bools]) {
      for (let axis = 0; axis < 3; axis++) {
        await expectSame(() => tf.gather(make(), tf.tensor1d([4, 0, 4, 2], "int32"), axis), 0);
        await expectSame(() => tf.gather(make(), tf.tensor2d([[1, 3], [0, 0], [4, 2]], [3, 2], "int32"), axis), 0);
      }
    }
    await expectSame(() => tf.gather(rand([8000, 256], 59), tf.tensor1d(Int32Array.from({ length: 1024 }, (_, i) => (i * 7919) % 8000), "int32")), 0);
    await expectSame(() => tf.gather(x(), tf.tensor1d([], "int32")), 0);
    await useBackend("native");
    const t = tf.zeros([4, 3]);
    expect(() => tf.gather(t, tf.tensor1d([1, 4], "int32"))).toThrow(/gather: index 4 outside \[0, 4\)/);
    t.dispose();
  });

  it("scatter-add of rows (a row gather's gradient): native kernel vs the host loop on cpu, repeated indices summed", async () => {
    for (const [n, rows, cols] of [[5, 3, 7], [1024, 8000, 256], [0, 4, 3]] as const) {
      const indices = Int32Array.from({ length: n }, (_, i) => (i * 7919) % rows);
      await expectSame(() => scatterAddRows(rand([n, cols], 60), indices, rows), 1e-6);
    }
    // hand-computed: rows 0 and 2 of dy both go to row 1
    await useBackend("native");
    const g = scatterAddRows(tf.tensor2d([[1, 2], [3, 4], [5, 6]]), Int32Array.from([1, 0, 1]), 3);
    expect(Array.from(g.dataSync())).toEqual([3, 4, 6, 8, 0, 0]);
    g.dispose();
    const dy = tf.ones([2, 2]);
    expect(() => scatterAddRows(dy, Int32Array.from([0, 3]), 3)).toThrow(/index 3 outside \[0, 3\)/);
    expect(() => scatterAddRows(dy, Int32Array.from([0]), 3)).toThrow(/1 indices for a gradient of shape \[2, 2\]/);
    dy.dispose();
  });

  it("fused log-softmax select: the selected log-probabilities and log-sum-exp match tfjs's logSumExp and gather on cpu", async () => {
    for (const [n, v] of [[3, 7], [37, 8000], [2, 1]] as const) {
      const targets = Int32Array.from({ length: n }, (_, i) => (i * 7919) % v);
      targets[n - 1] = v - 1;
      await expectSame(() => {
        const { value, lse } = logSoftmaxSelect(tf.mul(rand([n, v], 73), 30) as tf.Tensor2D, targets);
        return [value, lse];
      }, 2e-6);
    }
    await useBackend("native");
    const x = tf.tensor2d([[0, Math.log(3)], [1000, 1000]]);
    const { value, lse } = logSoftmaxSelect(x, Int32Array.from([1, 0]));
    // no overflow at 1000 (float32 keeps 1000 + log 2 to ~6e-5)
    expectClose(Array.from(value.dataSync()), [Math.log(3 / 4), -Math.log(2)], 1e-4);
    expectClose(Array.from(lse.dataSync()), [Math.log(4), 1000 + Math.log(2)]);
    expect(lse.shape).toEqual([2, 1]);
    expect(() => logSoftmaxSelect(x, Int32Array.from([1, 2]))).toThrow(/target 2 outside the vocabulary \[0, 2\)/);
    tf.dispose([x, value, lse]);
  });

  it("sum over leading axes, trailing axes, with keepDims; other axes via wasm", async () => {
    const x = (): tf.Tensor => rand([6, 7, 300], 61);
    for (const axis of [0, [0, 1], 2, [1, 2], [0, 1, 2], 1, [0, 2], -1]) {
      for (const keepDims of [false, true]) await expectSame(() => tf.sum(x(), axis, keepDims), 2e-6);
    }
    await expectSame(() => tf.sum(rand([1024, 256], 62), 0), 2e-6); // the threaded partial sums
    await expectSame(() => tf.sum(tf.cast(tf.mul(x(), 10), "int32"), 0), 0); // int32: wasm
    await expectSame(() => tf.sum(tf.zeros([0, 4]), 0), 0);
  });

  it("fused log-softmax gather gradient: one kernel on native, the tfjs ops' result on cpu", async () => {
    for (const [n, v] of [[3, 7], [37, 8000]] as const) {
      const targets = Int32Array.from({ length: n }, (_, i) => (i * 7919) % v);
      targets[0] = 0;
      targets[n - 1] = v - 1; // both ends of the vocabulary
      await expectSame(() => {
        const x = tf.mul(rand([n, v], 71), 8) as tf.Tensor2D;
        const lse = tf.logSumExp(x, 1, true) as tf.Tensor2D;
        return logSoftmaxSelectGrad(x, lse, targets, rand([n], 72));
      }, 2e-6);
    }
    await useBackend("native");
    const x = tf.zeros([2, 5]) as tf.Tensor2D;
    const lse = tf.zeros([2, 1]) as tf.Tensor2D;
    const dy = tf.ones([2]);
    expect(() => logSoftmaxSelectGrad(x, lse, Int32Array.from([1, 5]), dy)).toThrow(/target 5 outside \[0, 5\)/);
    expect(() => logSoftmaxSelectGrad(x, lse, Int32Array.from([1]), dy)).toThrow(/1 targets for 2 rows/);
    tf.dispose([x, lse, dy]);
  });

  it("fused AdamW step: the new parameter and moments match the tfjs ops on cpu", async () => {
    for (const [shape, weightDecay, t] of [[[256, 688], 0.01, 1], [[7], 0, 5], [[0, 3], 0.01, 2]] as const) {
      await expectSame(() => {
        const p = rand([...shape], 91);
        const g = tf.mul(rand([...shape], 92), 0.3);
        const m = tf.mul(rand([...shape], 93), 0.1);
        const v = tf.abs(tf.mul(rand([...shape], 94), 0.01));
        return adamwStep(p, g, m, v, { lr: 0.05, weightDecay, betas: [0.9, 0.999], eps: 1e-8, bc1: 1 - 0.9 ** t, bc2Sqrt: Math.sqrt(1 - 0.999 ** t) });
      }, 1e-6);
    }
  });

  it("fused attention: values and gradients match softmax(q·kᵀ·scale + bias)·v as tfjs ops on cpu, with grouped heads, a cache, padding and odd lengths", async () => {
    // [b, h, kv, t, past, d]: the bench model's shape; grouped heads with rows beyond one causal
    // block and a cache; one query after a long cache (a decoding step); a single head.
    const cases = [[8, 4, 4, 128, 0, 64], [2, 4, 2, 37, 5, 8], [3, 2, 1, 70, 0, 16], [2, 2, 2, 1, 40, 8], [1, 1, 1, 3, 0, 4]] as const;
    for (const [b, h, kv, t, past, d] of cases) {
      const s = past + t;
      const rep = h / kv;
      // left padding of a different length per row; row 1 (when there) padded past the first
      // causal block, so that its first queries see no key at all
      const mask = new Int32Array(b * s).fill(1);
      for (let r = 0; r < b; r++) for (let j = 0; j < Math.min(s - 1, r === 1 ? 34 : r); j++) mask[r * s + j] = 0;
      const scale = 1 / Math.sqrt(d);
      const inputs = (): tf.Tensor[] => [rand([b, h, t, d], 95), rand([b, kv, s, d], 96), rand([b, kv, s, d], 97)].map((x) => tf.mul(x, 2));
      const dy = (): tf.Tensor => rand([b, t, h, d], 98);
      const native = (): tf.Tensor[] => {
        const keyMask = tf.tensor2d(mask, [b, s], "int32");
        const { value, grads } = tf.valueAndGrads((q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) => fusedAttention(q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, keyMask, scale))(inputs(), dy() as tf.Tensor4D);
        keyMask.dispose();
        return [value, ...grads];
      };
      const reference = (): tf.Tensor[] => {
        const bias = new Float32Array(b * t * s);
        for (let r = 0; r < b; r++) for (let i = 0; i < t; i++) for (let j = 0; j < s; j++) if (j > past + i || mask[r * s + j] !== 1) bias[(r * t + i) * s + j] = -1e9;
        const biasT = tf.tensor4d(bias, [b, 1, t, s]);
        const f = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor): tf.Tensor => {
          const group = tf.tensor1d(Int32Array.from({ length: h }, (_, i) => Math.floor(i / rep)), "int32");
          const kr = tf.gather(k, group, 1); // each head's key/value group
          const vr = tf.gather(v, group, 1);
          const probs = tf.softmax(tf.add(tf.mul(tf.matMul(q, kr, false, true), scale), biasT));
          return tf.transpose(tf.matMul(probs, vr), [0, 2, 1, 3]);
        };
        const { value, grads } = tf.valueAndGrads(f)(inputs(), dy());
        return [value, ...grads];
      };
      await expectSame(native, 2e-5, reference);
    }
    await useBackend("native");
    const q = tf.zeros([1, 3, 2, 4]) as tf.Tensor4D;
    const k = tf.zeros([1, 2, 2, 4]) as tf.Tensor4D;
    const m = tf.ones([1, 2], "int32") as tf.Tensor2D;
    expect(() => fusedAttention(q, k, k, m, 1)).toThrow(/q \[1,3,2,4\], k \[1,2,2,4\].*do not fit together/);
    tf.dispose([q, k, m]);
    await useBackend("wasm");
    const w = tf.zeros([1, 1, 1, 1]) as tf.Tensor4D;
    const wm = tf.ones([1, 1], "int32") as tf.Tensor2D;
    expect(() => fusedAttention(w, w, w, wm, 1)).toThrow(/native backend only \(active: wasm\)/);
    tf.dispose([w, wm]);
  });

  it("fused RMSNorm, SwiGLU and rotary embedding: values and gradients of the native kernels match the tfjs ops on cpu", async () => {
    // rows × hidden as in the bench model (threaded partial sums of dw), an odd small shape, no rows.
    for (const [n, h] of [[1024, 256], [3, 7], [0, 5]] as const) {
      const x = (): tf.Tensor2D => tf.mul(rand([n, h], 81), 3) as tf.Tensor2D;
      const w = (): tf.Tensor1D => tf.add(rand([h], 82), 1) as tf.Tensor1D;
      const dy = (): tf.Tensor2D => rand([n, h], 83) as tf.Tensor2D;
      // On cpu rmsNorm is the tfjs op sequence, differentiated by tfjs: the reference.
      await expectSame(() => {
        const { value, grads } = tf.valueAndGrads((a: tf.Tensor, b: tf.Tensor) => rmsNorm(a as tf.Tensor2D, b as tf.Tensor1D, 1e-5))([x(), w()], dy());
        return [value, ...grads];
      }, 1e-5);
      await expectSame(() => {
        const { value, grads } = tf.valueAndGrads((g: tf.Tensor, u: tf.Tensor) => swiglu(g, u))([tf.mul(rand([n, h], 84), 6), rand([n, h], 85)], dy());
        return [value, ...grads];
      }, 1e-5);
    }
    // Rotary embedding: tables per (batch, position), shared by the heads; sin differs between the
    // halves here, which the real tables never do, so a transposition mistake cannot cancel out.
    for (const [b, h, t, d] of [[2, 3, 5, 8], [8, 4, 128, 64]] as const) {
      // The tables are disposed right after the forward pass, as the model does.
      const f = (x: tf.Tensor): tf.Tensor => {
        const cos = rand([b, 1, t, d], 86) as tf.Tensor4D;
        const sin = rand([b, 1, t, d], 87) as tf.Tensor4D;
        const y = rotary(x as tf.Tensor4D, cos, sin);
        tf.dispose([cos, sin]);
        return y;
      };
      await expectSame(() => {
        const { value, grads } = tf.valueAndGrads(f)([rand([b, h, t, d], 88)], rand([b, h, t, d], 89) as tf.Tensor4D);
        return [value, ...grads];
      }, 1e-5);
    }
    // eps matters: a zero row normalises to 0 rather than NaN.
    await expectSame(() => rmsNorm(tf.zeros([2, 4]), tf.ones([4]), 1e-6), 0);
  });

  it("native decoding step: checks its arrays and token ids, and refuses a full cache", async () => {
    // Token-identical greedy generation against transformers on this path is in @pbrl/models'
    // parity tests (run on native by CI); here, what the addon refuses.
    await useBackend("native");
    const dims = { hidden: 8, heads: 2, kvHeads: 1, headDim: 4, intermediate: 16, vocab: 10, layers: 1, rmsNormEps: 1e-6 };
    const t = (shape: number[], seed: number): tf.Tensor => rand(shape, seed);
    const tensors = {
      embed: t([10, 8], 1), finalNorm: t([8], 2), lmHead: t([10, 8], 3),
      layers: [{ inputNorm: t([8], 4), q: t([8, 8], 5), k: t([4, 8], 6), v: t([4, 8], 7), o: t([8, 8], 8), postNorm: t([8], 9), gate: t([16, 8], 10), up: t([16, 8], 11), down: t([8, 16], 12) }],
    };
    const weights = decodeWeightOffsets(tensors);
    const cache = new NativeDecodeCache(dims, 2, 2);
    const step = (ids: number[], maskLen: number) => ({ ids: Int32Array.from(ids), cos: new Float32Array(8).fill(1), sin: new Float32Array(8), keyMask: new Uint8Array(maskLen).fill(1) });
    const logits = new Float32Array(20);
    nativeDecodeStep(weights, cache, step([1, 2], 2), logits);
    expect(cache.length).toBe(1);
    expect(logits.every((x) => Number.isFinite(x)) && logits.some((x) => x !== 0)).toBe(true);
    expect(() => nativeDecodeStep(weights, cache, step([1, 2], 2), logits)).toThrow(/decode: an array has the wrong length/); // mask of 2 × 1 for 2 × 2
    expect(() => nativeDecodeStep(weights, cache, step([1, 10], 4), logits)).toThrow(/decode: token id outside the vocabulary/);
    nativeDecodeStep(weights, cache, step([3, 4], 4), logits);
    expect(() => nativeDecodeStep(weights, cache, step([1, 2], 6), logits)).toThrow(/the cache is full \(2 positions\)/);
    tf.dispose([tensors.embed, tensors.finalNorm, tensors.lmHead, ...Object.values(tensors.layers[0]!)]);
  });

  it("gradients through native matMul, batched matMul, transpose and exp match cpu", async () => {
    const f = (): tf.Tensor[] => {
      const a = rand([3, 8, 16], 21);
      // [3, 16, 12], not a broadcast [16, 12]: tfjs's BatchMatMul gradient does not reduce a
      // broadcast batch back to the input's shape (on any backend)
      const b = rand([3, 16, 12], 22);
      const c = rand([3, 12, 8], 23);
      const g = tf.grads((x: tf.Tensor, y: tf.Tensor, z: tf.Tensor) => {
        const h = tf.exp(tf.matMul(x, y)); // [3, 8, 12]
        const s = tf.matMul(h, z, false, false); // [3, 8, 8]
        return tf.sum(tf.square(tf.transpose(s, [0, 2, 1])));
      });
      return g([a, b, c]);
    };
    await expectSame(f, 2e-5);
  });

  it("keeps working when the heap grows between calls (the buffer is re-read)", async () => {
    await useBackend("native");
    const a = rand([64, 64], 31);
    const big = tf.zeros([64 * 1024 * 1024 / 4]); // 64 MiB: forces the wasm memory to grow
    const y = tf.matMul(a, a);
    const ref = await on("cpu", () => tf.matMul(rand([64, 64], 31), rand([64, 64], 31)));
    await useBackend("native");
    const got = y.dataSync();
    let diff = 0;
    for (let i = 0; i < got.length; i++) diff = Math.max(diff, Math.abs(got[i]! - ref[0]!.data[i]!));
    expect(diff).toBeLessThan(1e-4);
    tf.dispose([a, big, y]);
  });

  it("the addon rejects offsets outside the heap instead of writing there", async () => {
    expect(load.ok).toBe(true);
    if (!load.ok) return;
    const heap = new ArrayBuffer(1024);
    expect(() => load.addon.matmul(heap, 0, 0, 2048, 1, 4, 4, 4, false, false, 1, 1, null, null, -1, 0, 0, 0)).toThrow(/matmul out: offset 2048/);
    expect(() => load.addon.unary(heap, 0, 0, 512, 200)).toThrow(/unary output/);
    expect(() => load.addon.transpose(heap, 0, 0, Int32Array.from([2, 2]), Int32Array.from([0, 0]))).toThrow(/bad shape\/perm/);
    expect(() => load.addon.unary(heap, 99, 0, 0, 4)).toThrow(/unknown unary op 99/);
  });
});

describe("OpenBLAS kernel family", () => {
  it("PBRL_BLAS_CORETYPE chooses; otherwise OpenBLAS detects the processor, whatever OPENBLAS_CORETYPE says", () => {
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "Haswell" })).toBe("Haswell");
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "Haswell", OPENBLAS_CORETYPE: "Zen" })).toBe("Haswell");
    expect(blasCoreType({ OPENBLAS_CORETYPE: "Haswell" })).toBeUndefined(); // a machine-wide setting for other programs
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "" })).toBeUndefined();
    expect(blasCoreType({})).toBeUndefined();
  });

  it.skipIf(!load.ok)("the loaded OpenBLAS runs the chosen kernels, an inherited OPENBLAS_CORETYPE it did not apply is reported, and the environment is left as it was", async () => {
    expect(process.env["OPENBLAS_CORETYPE"]).toBe(coreTypeBefore);
    if (!load.ok) return;
    const chosen = process.env["PBRL_BLAS_CORETYPE"];
    if (chosen !== undefined && chosen !== "") expect(load.info.blasCore.toLowerCase()).toBe(chosen.toLowerCase());
    else expect(load.ignoredCoreType).toBe(coreTypeBefore === "" ? undefined : coreTypeBefore);
    const info = await useBackend("native");
    if (load.ignoredCoreType !== undefined) expect(info.description).toContain(`OPENBLAS_CORETYPE=${load.ignoredCoreType} is not applied, set PBRL_BLAS_CORETYPE to choose`);
    await useBackend("wasm");
  });
});

describe("fallback to wasm", () => {
  const saved = { native: process.env["PBRL_NATIVE"], addon: process.env["PBRL_NATIVE_ADDON"], backend: process.env["PBRL_BACKEND"] };
  afterEach(async () => {
    for (const [k, v] of [["PBRL_NATIVE", saved.native], ["PBRL_NATIVE_ADDON", saved.addon], ["PBRL_BACKEND", saved.backend]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await useBackend("wasm");
  });

  it("PBRL_NATIVE=off: the default backend is wasm, and its log line says why", async () => {
    process.env["PBRL_NATIVE"] = "off";
    delete process.env["PBRL_BACKEND"];
    const info = await useDefaultBackend();
    expect(info.name).toBe("wasm");
    expect(tf.getBackend()).toBe("wasm");
    expect(info.description).toMatch(/^tensor backend: wasm \(WebAssembly SIMD, single-threaded; native backend disabled by PBRL_NATIVE=off\)/);
    expect(currentBackend()).toEqual(info);
    await expect(useBackend("native")).rejects.toThrow(/backend=native is unavailable: disabled by PBRL_NATIVE=off; unset PBRL_NATIVE/);
  });

  it("an addon that is not there: backend=native is a clear BackendUnavailableError, the default falls back", async () => {
    process.env["PBRL_NATIVE_ADDON"] = "/nonexistent/pbrl_native.node";
    delete process.env["PBRL_NATIVE"];
    delete process.env["PBRL_BACKEND"];
    const err = await useBackend("native").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toMatch(/native addon not built \(\/nonexistent\/pbrl_native\.node does not exist\).*libopenblas-dev.*pnpm install.*backend=wasm/);
    expect(tf.getBackend()).toBe("wasm"); // the previous backend stays in use
    const info = await useDefaultBackend();
    expect(info.name).toBe("wasm");
    expect(info.description).toMatch(/native backend unavailable: native addon not built/);
  });

  it("a file that is not a loadable addon: the reason carries the loader's message", async () => {
    process.env["PBRL_NATIVE_ADDON"] = new URL("../package.json", import.meta.url).pathname;
    delete process.env["PBRL_NATIVE"];
    const r = loadNativeAddon();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/native addon .*package\.json failed to load: /);
    await expect(useBackend("native")).rejects.toThrow(BackendUnavailableError);
  });

  it("an addon built from older sources is refused as out of date, saying how to rebuild it", async () => {
    process.env["PBRL_NATIVE_ADDON"] = new URL("fixtures/stale-addon.cjs", import.meta.url).pathname;
    delete process.env["PBRL_NATIVE"];
    const r = loadNativeAddon();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/stale-addon\.cjs failed to load: it is out of date \(no copy2d, gather, scatterAddRows, sum, logsoftmaxGrad, logsoftmaxSelect, rmsnorm, rmsnormGrad, swiglu, swigluGrad, rope, attention, attentionGrad, decode, sample, adamw\); rebuild it: pnpm --filter @pbrl\/core-tensor build:native/);
    await expect(useBackend("native")).rejects.toThrow(/out of date/);
  });

  it.skipIf(unavailable !== undefined && !required)("with the addon built and nothing forced, the default is native", async () => {
    delete process.env["PBRL_NATIVE"];
    delete process.env["PBRL_NATIVE_ADDON"];
    delete process.env["PBRL_BACKEND"];
    const info = await useDefaultBackend();
    expect(info.name).toBe("native");
    expect(info.description).toContain("OpenBLAS");
  });

  it("PBRL_BACKEND wins over the automatic choice", async () => {
    process.env["PBRL_BACKEND"] = "cpu";
    expect((await useDefaultBackend()).name).toBe("cpu");
  });
});

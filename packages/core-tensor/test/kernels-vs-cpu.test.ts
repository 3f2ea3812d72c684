// The kernels the native (OpenBLAS addon on the wasm heap) and libtorch (ATen) backends run in
// place of tfjs's, against the pure-JS `cpu` reference: matrix products in every transpose and
// broadcast form, fused bias and activations, transposes, unary ops, slices, gathers, sums, and
// pbrl's fused kernels (log-softmax select and its gradient, scatter-add, AdamW, attention,
// RMSNorm, SwiGLU, rotary), with gradients through them.
//
// A backend's tests skip, naming why, only when its addon is not built; with
// PBRL_REQUIRE_NATIVE=1 / PBRL_REQUIRE_LIBTORCH=1 (set by .ci/run where it can build them) a
// missing addon fails instead, so CI cannot silently lose a path.
import { afterEach, describe, expect, it } from "vitest";
import {
  adamwStep,
  fusedAttention,
  loadLibtorchAddon,
  loadNativeAddon,
  logSoftmaxSelect,
  logSoftmaxSelectGrad,
  nativeThreads,
  rmsNorm,
  rotary,
  scatterAddRows,
  swiglu,
  tf,
  useBackend,
  type BackendName,
} from "../src/index.js";
import { expectClose, expectSame, rand } from "./compare-backends.js";

const native = loadNativeAddon();
const libtorch = loadLibtorchAddon(nativeThreads());
const BACKENDS: { backend: BackendName; missing: string | undefined }[] = [
  { backend: "native", missing: native.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? undefined : native.reason },
  { backend: "libtorch", missing: libtorch.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : libtorch.reason },
];

describe.each(BACKENDS)("$backend kernels vs cpu", ({ backend, missing }) => {
  afterEach(async () => {
    await useBackend("wasm");
  });
  if (missing !== undefined) {
    it.skip(`skipped: ${missing}`, () => undefined);
    return;
  }

  it("matMul: 2-D, all transpose combinations, odd and degenerate sizes", async () => {
    for (const [m, k, n] of [
      [1, 1, 1],
      [3, 5, 7],
      [17, 64, 33],
      [128, 256, 96],
      [1, 300, 8000], // one row: sgemv
      [2, 40, 37], // a few rows times a weight as stored (few_rows.h): whole and partial lanes and tiles
      [8, 33, 11],
      [9, 40, 37], // past eight rows: groups of eight per tile of weight rows (AVX-512), else sgemm
      [13, 33, 11], // a group of eight and one of five, partial tiles
      [16, 40, 37],
      [17, 40, 37], // past the few-rows limit everywhere
      [5, 7, 1], // one column: sgemv
      [300, 64, 1],
    ] as const) {
      for (const ta of [false, true]) {
        for (const tb of [false, true]) {
          await expectSame(backend, () => tf.matMul(rand(ta ? [k, m] : [m, k], m + k), rand(tb ? [n, k] : [k, n], n * 7 + 1), ta, tb));
        }
      }
    }
    await expectSame(backend, () => tf.matMul(tf.slice(rand([6, 60], 3), [0, 5], [6, 40]), rand([37, 40], 4), false, true)); // rows with a stride
    await expectSame(backend, () => tf.matMul(tf.zeros([4, 0]), tf.zeros([0, 3]))); // K = 0: zeros
    await expectSame(backend, () => tf.matMul(tf.zeros([0, 5]), rand([5, 3], 2)));
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
      await expectSame(
        backend,
        () => tf.matMul(a(), b(), ta, tb),
        1e-5,
        () => tf.matMul(full(a()), full(b()), ta, tb),
      );
    }
  });

  it("fused matMul: bias (per column and scalar) and each activation the addon implements", async () => {
    const a = (): tf.Tensor2D => rand([9, 24], 3) as tf.Tensor2D;
    const b = (): tf.Tensor2D => rand([24, 10], 4) as tf.Tensor2D;
    for (const activation of ["linear", "relu", "relu6", "sigmoid", "elu", "leakyrelu"] as const) {
      await expectSame(backend, () => tf.fused.matMul({ a: a(), b: b(), bias: rand([10], 5), activation, leakyreluAlpha: 0.2 }));
      await expectSame(backend, () => tf.fused.matMul({ a: a(), b: b(), bias: tf.scalar(0.3).reshape([1]), activation, leakyreluAlpha: 0.2 }));
      await expectSame(backend, () =>
        tf.fused.matMul({ a: rand([24, 9], 3) as tf.Tensor2D, b: rand([10, 24], 4) as tf.Tensor2D, transposeA: true, transposeB: true, activation }),
      );
    }
    // prelu (weights as an input) is not in the addon: the wasm kernel runs, with the same result
    await expectSame(backend, () => tf.fused.matMul({ a: a(), b: b(), activation: "prelu", preluActivationWeights: rand([10], 6) }));
  });

  it("transpose: 2-D to 5-D permutations, float32 and int32, size-1 axes", async () => {
    const cases: [number[], number[]][] = [
      [
        [7, 13],
        [1, 0],
      ],
      [
        [300, 200],
        [1, 0],
      ],
      [
        [2, 8, 16, 32],
        [0, 2, 1, 3],
      ], // heads ↔ positions, as attention does
      [
        [2, 16, 8, 32],
        [0, 2, 3, 1],
      ],
      [
        [3, 4, 5],
        [2, 0, 1],
      ],
      [
        [3, 4, 5],
        [1, 2, 0],
      ],
      [
        [2, 3, 4, 5, 6],
        [4, 2, 0, 3, 1],
      ],
      [
        [1, 6, 1, 9],
        [3, 1, 2, 0],
      ],
      [
        [4, 1, 6],
        [1, 0, 2],
      ], // identity once the size-1 axis is dropped
    ];
    for (const [shape, perm] of cases) {
      await expectSame(backend, () => tf.transpose(rand(shape, shape.length), perm), 0);
      await expectSame(backend, () => tf.transpose(tf.cast(tf.mul(rand(shape, 9), 1000), "int32"), perm), 0);
    }
  });

  it("exp: values, overflow, underflow, ±Infinity and NaN", async () => {
    await expectSame(backend, () => tf.exp(tf.mul(rand([100_000], 11), 90)), 2e-6); // large: the threaded path
    await expectSame(backend, () => tf.exp(tf.tensor1d([0, 1, -1, 88, 88.8, 89, -87, -88, -104, -200, Infinity, -Infinity, NaN, 1e-8])), 2e-6);
    await expectSame(backend, () => tf.softmax(tf.mul(rand([8, 8000], 12), 20)), 2e-6);
  });

  it("unary ops: sigmoid, sqrt, rsqrt, reciprocal, on small and large (threaded) inputs and edge values", async () => {
    const edges = [0, 1, -1, 1e-30, 4, 100, -100, 1e30, Infinity, -Infinity, NaN];
    for (const op of [tf.sigmoid, tf.sqrt, tf.rsqrt, tf.reciprocal] as ((x: tf.Tensor) => tf.Tensor)[]) {
      await expectSame(backend, () => op(tf.mul(rand([70_001], 41), 30)), 2e-6);
      await expectSame(backend, () => op(tf.abs(rand([3, 5], 42))), 2e-6);
      await expectSame(backend, () => op(tf.tensor1d(edges)), 2e-6);
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
        await expectSame(backend, () => tf.slice(make(), begin, size), 0);
        await expectSame(backend, () => tf.split(make(), axis === 0 ? 3 : [1, 2, make().shape[axis]! - 3], axis), 0);
        await expectSame(backend, () => tf.concat([make(), tf.slice(make(), begin, size), make()], axis), 0);
      }
      await expectSame(backend, () => tf.slice(make(), [1, 1, 0, 2], [1, 2, 5, 3]), 0); // several cut axes: the wasm kernel
      await expectSame(backend, () => tf.concat([make(), tf.zeros(make().shape, make().dtype).slice([0, 0, 0, 0], [3, 4, 5, 0])], 3), 0); // an empty input
    }
    await expectSame(backend, () => tf.slice(rand([8, 4, 128, 64], 52), [0, 0, 0, 32], [-1, -1, -1, 32]), 0); // the rotary half
  });

  it("gather: rows of float32, int32 and bool along each axis, n-D indices, repeats; out-of-range indices throw", async () => {
    const x = (): tf.Tensor => rand([5, 6, 7], 58);
    const ints = (): tf.Tensor => tf.cast(tf.mul(x(), 100), "int32");
    const bools = (): tf.Tensor => tf.greater(x(), 0);
    for (const make of [x, ints, bools]) {
      for (let axis = 0; axis < 3; axis++) {
        await expectSame(backend, () => tf.gather(make(), tf.tensor1d([4, 0, 4, 2], "int32"), axis), 0);
        await expectSame(
          backend,
          () =>
            tf.gather(
              make(),
              tf.tensor2d(
                [
                  [1, 3],
                  [0, 0],
                  [4, 2],
                ],
                [3, 2],
                "int32",
              ),
              axis,
            ),
          0,
        );
      }
    }
    await expectSame(
      backend,
      () =>
        tf.gather(
          rand([8000, 256], 59),
          tf.tensor1d(
            Int32Array.from({ length: 1024 }, (_, i) => (i * 7919) % 8000),
            "int32",
          ),
        ),
      0,
    );
    await expectSame(backend, () => tf.gather(x(), tf.tensor1d([], "int32")), 0);
    await useBackend(backend);
    const t = tf.zeros([4, 3]);
    expect(() => tf.gather(t, tf.tensor1d([1, 4], "int32"))).toThrow(/gather: index 4 outside \[0, 4\)/);
    t.dispose();
  });

  it("scatter-add of rows (a row gather's gradient): the kernel vs the host loop on cpu, repeated indices summed", async () => {
    for (const [n, rows, cols] of [
      [5, 3, 7],
      [1024, 8000, 256],
      [0, 4, 3],
    ] as const) {
      const indices = Int32Array.from({ length: n }, (_, i) => (i * 7919) % rows);
      await expectSame(backend, () => scatterAddRows(rand([n, cols], 60), indices, rows), 1e-6);
    }
    // hand-computed: rows 0 and 2 of dy both go to row 1
    await useBackend(backend);
    const g = scatterAddRows(
      tf.tensor2d([
        [1, 2],
        [3, 4],
        [5, 6],
      ]),
      Int32Array.from([1, 0, 1]),
      3,
    );
    expect(Array.from(g.dataSync())).toEqual([3, 4, 6, 8, 0, 0]);
    g.dispose();
    const dy = tf.ones([2, 2]);
    expect(() => scatterAddRows(dy, Int32Array.from([0, 3]), 3)).toThrow(/index 3 outside \[0, 3\)/);
    expect(() => scatterAddRows(dy, Int32Array.from([0]), 3)).toThrow(/1 indices for a gradient of shape \[2, 2\]/);
    dy.dispose();
  });

  it("fused log-softmax select: the selected log-probabilities and log-sum-exp match tfjs's logSumExp and gather on cpu", async () => {
    for (const [n, v] of [
      [3, 7],
      [37, 8000],
      [2, 1],
    ] as const) {
      const targets = Int32Array.from({ length: n }, (_, i) => (i * 7919) % v);
      targets[n - 1] = v - 1;
      await expectSame(
        backend,
        () => {
          const { value, lse } = logSoftmaxSelect(tf.mul(rand([n, v], 73), 30) as tf.Tensor2D, targets);
          return [value, lse];
        },
        2e-6,
      );
    }
    await useBackend(backend);
    const x = tf.tensor2d([
      [0, Math.log(3)],
      [1000, 1000],
    ]);
    const { value, lse } = logSoftmaxSelect(x, Int32Array.from([1, 0]));
    // no overflow at 1000 (float32 keeps 1000 + log 2 to ~6e-5)
    expectClose(Array.from(value.dataSync()), [Math.log(3 / 4), -Math.log(2)], 1e-4);
    expectClose(Array.from(lse.dataSync()), [Math.log(4), 1000 + Math.log(2)]);
    expect(lse.shape).toEqual([2, 1]);
    expect(() => logSoftmaxSelect(x, Int32Array.from([1, 2]))).toThrow(/target 2 outside the vocabulary \[0, 2\)/);
    tf.dispose([x, value, lse]);
  });

  it("sum over leading axes, trailing axes, with keepDims, any other axes", async () => {
    const x = (): tf.Tensor => rand([6, 7, 300], 61);
    for (const axis of [0, [0, 1], 2, [1, 2], [0, 1, 2], 1, [0, 2], -1]) {
      for (const keepDims of [false, true]) await expectSame(backend, () => tf.sum(x(), axis, keepDims), 2e-6);
    }
    await expectSame(backend, () => tf.sum(rand([1024, 256], 62), 0), 2e-6); // the threaded partial sums
    await expectSame(backend, () => tf.sum(tf.cast(tf.mul(x(), 10), "int32"), 0), 0); // int32: wasm
    await expectSame(backend, () => tf.sum(tf.zeros([0, 4]), 0), 0);
  });

  it("fused log-softmax gather gradient: one kernel, the tfjs ops' result on cpu", async () => {
    for (const [n, v] of [
      [3, 7],
      [37, 8000],
    ] as const) {
      const targets = Int32Array.from({ length: n }, (_, i) => (i * 7919) % v);
      targets[0] = 0;
      targets[n - 1] = v - 1; // both ends of the vocabulary
      await expectSame(
        backend,
        () => {
          const x = tf.mul(rand([n, v], 71), 8) as tf.Tensor2D;
          const lse = tf.logSumExp(x, 1, true) as tf.Tensor2D;
          return logSoftmaxSelectGrad(x, lse, targets, rand([n], 72));
        },
        2e-6,
      );
    }
    await useBackend(backend);
    const x = tf.zeros([2, 5]) as tf.Tensor2D;
    const lse = tf.zeros([2, 1]) as tf.Tensor2D;
    const dy = tf.ones([2]);
    expect(() => logSoftmaxSelectGrad(x, lse, Int32Array.from([1, 5]), dy)).toThrow(/target 5 outside \[0, 5\)/);
    expect(() => logSoftmaxSelectGrad(x, lse, Int32Array.from([1]), dy)).toThrow(/1 targets for 2 rows/);
    tf.dispose([x, lse, dy]);
  });

  it("fused AdamW step: the new parameter and moments match the tfjs ops on cpu", async () => {
    for (const [shape, weightDecay, t] of [
      [[256, 688], 0.01, 1],
      [[7], 0, 5],
      [[0, 3], 0.01, 2],
    ] as const) {
      await expectSame(
        backend,
        () => {
          const p = rand([...shape], 91);
          const g = tf.mul(rand([...shape], 92), 0.3);
          const m = tf.mul(rand([...shape], 93), 0.1);
          const v = tf.abs(tf.mul(rand([...shape], 94), 0.01));
          return adamwStep(p, g, m, v, { lr: 0.05, weightDecay, betas: [0.9, 0.999], eps: 1e-8, bc1: 1 - 0.9 ** t, bc2Sqrt: Math.sqrt(1 - 0.999 ** t) });
        },
        1e-6,
      );
    }
  });

  it("fused attention: values and gradients match softmax(q·kᵀ·scale + bias)·v as tfjs ops on cpu, with grouped heads, a cache, padding and odd lengths", async () => {
    // [b, h, kv, t, past, d]: the bench model's shape; grouped heads with rows beyond one causal
    // block and a cache; one query after a long cache (a decoding step); a single head.
    const cases = [
      [8, 4, 4, 128, 0, 64],
      [2, 4, 2, 37, 5, 8],
      [3, 2, 1, 70, 0, 16],
      [2, 2, 2, 1, 40, 8],
      [1, 1, 1, 3, 0, 4],
    ] as const;
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
      const fused = (): tf.Tensor[] => {
        const keyMask = tf.tensor2d(mask, [b, s], "int32");
        const { value, grads } = tf.valueAndGrads((q: tf.Tensor, k: tf.Tensor, v: tf.Tensor) =>
          fusedAttention(q as tf.Tensor4D, k as tf.Tensor4D, v as tf.Tensor4D, keyMask, scale),
        )(inputs(), dy() as tf.Tensor4D);
        keyMask.dispose();
        return [value, ...grads];
      };
      const reference = (): tf.Tensor[] => {
        const bias = new Float32Array(b * t * s);
        for (let r = 0; r < b; r++)
          for (let i = 0; i < t; i++) for (let j = 0; j < s; j++) if (j > past + i || mask[r * s + j] !== 1) bias[(r * t + i) * s + j] = -1e9;
        const biasT = tf.tensor4d(bias, [b, 1, t, s]);
        const f = (q: tf.Tensor, k: tf.Tensor, v: tf.Tensor): tf.Tensor => {
          const group = tf.tensor1d(
            Int32Array.from({ length: h }, (_, i) => Math.floor(i / rep)),
            "int32",
          );
          const kr = tf.gather(k, group, 1); // each head's key/value group
          const vr = tf.gather(v, group, 1);
          const probs = tf.softmax(tf.add(tf.mul(tf.matMul(q, kr, false, true), scale), biasT));
          return tf.transpose(tf.matMul(probs, vr), [0, 2, 1, 3]);
        };
        const { value, grads } = tf.valueAndGrads(f)(inputs(), dy());
        return [value, ...grads];
      };
      await expectSame(backend, fused, 2e-5, reference);
    }
    await useBackend(backend);
    const q = tf.zeros([1, 3, 2, 4]) as tf.Tensor4D;
    const k = tf.zeros([1, 2, 2, 4]) as tf.Tensor4D;
    const m = tf.ones([1, 2], "int32") as tf.Tensor2D;
    expect(() => fusedAttention(q, k, k, m, 1)).toThrow(/q \[1,3,2,4\], k \[1,2,2,4\].*do not fit together/);
    tf.dispose([q, k, m]);
    await useBackend("wasm");
    const w = tf.zeros([1, 1, 1, 1]) as tf.Tensor4D;
    const wm = tf.ones([1, 1], "int32") as tf.Tensor2D;
    expect(() => fusedAttention(w, w, w, wm, 1)).toThrow(/native and libtorch backends only \(active: wasm\)/);
    tf.dispose([w, wm]);
  });

  it("fused RMSNorm, SwiGLU and rotary embedding: values and gradients of the fused kernels match the tfjs ops on cpu", async () => {
    // rows × hidden as in the bench model (threaded partial sums of dw), an odd small shape, no rows.
    for (const [n, h] of [
      [1024, 256],
      [3, 7],
      [0, 5],
    ] as const) {
      const x = (): tf.Tensor2D => tf.mul(rand([n, h], 81), 3) as tf.Tensor2D;
      const w = (): tf.Tensor1D => tf.add(rand([h], 82), 1) as tf.Tensor1D;
      const dy = (): tf.Tensor2D => rand([n, h], 83) as tf.Tensor2D;
      // On cpu rmsNorm is the tfjs op sequence, differentiated by tfjs: the reference.
      await expectSame(
        backend,
        () => {
          const { value, grads } = tf.valueAndGrads((a: tf.Tensor, b: tf.Tensor) => rmsNorm(a as tf.Tensor2D, b as tf.Tensor1D, 1e-5))([x(), w()], dy());
          return [value, ...grads];
        },
        1e-5,
      );
      await expectSame(
        backend,
        () => {
          const { value, grads } = tf.valueAndGrads((g: tf.Tensor, u: tf.Tensor) => swiglu(g, u))([tf.mul(rand([n, h], 84), 6), rand([n, h], 85)], dy());
          return [value, ...grads];
        },
        1e-5,
      );
    }
    // Rotary embedding: tables per (batch, position), shared by the heads; sin differs between the
    // halves here, which the real tables never do, so a transposition mistake cannot cancel out.
    for (const [b, h, t, d] of [
      [2, 3, 5, 8],
      [8, 4, 128, 64],
    ] as const) {
      // The tables are disposed right after the forward pass, as the model does.
      const f = (x: tf.Tensor): tf.Tensor => {
        const cos = rand([b, 1, t, d], 86) as tf.Tensor4D;
        const sin = rand([b, 1, t, d], 87) as tf.Tensor4D;
        const y = rotary(x as tf.Tensor4D, cos, sin);
        tf.dispose([cos, sin]);
        return y;
      };
      await expectSame(
        backend,
        () => {
          const { value, grads } = tf.valueAndGrads(f)([rand([b, h, t, d], 88)], rand([b, h, t, d], 89) as tf.Tensor4D);
          return [value, ...grads];
        },
        1e-5,
      );
    }
    // eps matters: a zero row normalises to 0 rather than NaN.
    await expectSame(backend, () => rmsNorm(tf.zeros([2, 4]), tf.ones([4]), 1e-6), 0);
  });

  it("gradients through matMul, batched matMul, transpose and exp match cpu", async () => {
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
    await expectSame(backend, f, 2e-5);
  });
});

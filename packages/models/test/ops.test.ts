// The custom-gradient ops that work around missing wasm kernels, checked on every backend
// against gradients computed a different way.
import { describe, expect, it } from "vitest";
import { loadNativeAddon, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import { gatherRows, matMul, selectedLogProbs } from "../src/index.js";

describe.each<BackendName>(["wasm", "cpu"])("custom-gradient ops on %s", (backend) => {
  it("wasm still lacks UnsortedSegmentSum, so tf.gather's own gradient fails there (canary)", async () => {
    await useBackend(backend);
    const e = tf.variable(tf.ones([4, 2]));
    const run = () => tf.variableGrads(() => tf.sum(tf.gather(e, tf.tensor1d([1, 1, 3], "int32"))) as tf.Scalar, [e]);
    if (backend === "wasm") expect(run).toThrow(/UnsortedSegmentSum/);
    else tf.dispose(Object.values(run().grads));
    e.dispose();
  });

  it("gatherRows: gradient scatter-adds into the selected rows (hand-computed)", async () => {
    await useBackend(backend);
    const e = tf.variable(
      tf.tensor2d([
        [1, 2],
        [3, 4],
        [5, 6],
        [7, 8],
      ]),
    );
    const w = tf.tensor2d([
      [1, 10],
      [100, 1000],
      [2, 3],
    ]);
    const { value, grads } = tf.variableGrads(() => tf.sum(tf.mul(gatherRows(e, Int32Array.from([1, 1, 3])), w)) as tf.Scalar, [e]);
    expect(value.dataSync()[0]).toBe(3 * 1 + 4 * 10 + 3 * 100 + 4 * 1000 + 7 * 2 + 8 * 3);
    expect(Array.from(grads[e.name]!.dataSync())).toEqual([0, 0, 101, 1010, 0, 0, 2, 3]);
    tf.dispose([value, e, w, ...Object.values(grads)]);
    expect(() => gatherRows(tf.zeros([2, 2]) as tf.Tensor2D, Int32Array.from([2]))).toThrow(/index 2 outside \[0, 2\)/);
  });

  it("selectedLogProbs: value and gradient equal log-softmax · one-hot", async () => {
    await useBackend(backend);
    const logits = tf.variable(
      tf.tensor2d([
        [1, 2, 3],
        [0.5, -1, 4],
        [10, 10, 10],
      ]),
    );
    const targets = Int32Array.from([2, 0, 1]);
    const weights = tf.tensor1d([1, -2, 0.5]);
    const fused = tf.variableGrads(() => tf.sum(tf.mul(selectedLogProbs(logits, targets), weights)) as tf.Scalar, [logits]);
    const onehot = tf.oneHot(tf.tensor1d(targets, "int32"), 3);
    const naive = tf.variableGrads(() => tf.sum(tf.mul(tf.sum(tf.mul(tf.logSoftmax(logits), onehot), 1), weights)) as tf.Scalar, [logits]);
    expect(fused.value.dataSync()[0]).toBeCloseTo(naive.value.dataSync()[0]!, 5);
    const a = fused.grads[logits.name]!.dataSync();
    const b = naive.grads[logits.name]!.dataSync();
    for (let i = 0; i < a.length; i++) expect(a[i]).toBeCloseTo(b[i]!, 6);
    // hand check, row 3: uniform softmax, target 1, weight 0.5 → 0.5·(onehot − 1/3)
    expect(a[7]).toBeCloseTo(0.5 * (1 - 1 / 3), 6);
    expect(a[6]).toBeCloseTo(-0.5 / 3, 6);
    tf.dispose([logits, weights, onehot, fused.value, naive.value, ...Object.values(fused.grads), ...Object.values(naive.grads)]);
    expect(() => selectedLogProbs(tf.zeros([1, 3]) as tf.Tensor2D, Int32Array.from([3]))).toThrow(/target 3 outside the vocabulary/);
  });

  it("a comparison op inside the tape breaks variableGrads (canary), so masks are built on the host", async () => {
    await useBackend(backend);
    const x = tf.variable(tf.tensor1d([-1, 2]));
    expect(() => tf.variableGrads(() => tf.sum(tf.where(tf.greater(x, 0), x, tf.zerosLike(x))) as tf.Scalar, [x])).toThrow(/Greater/);
    x.dispose();
  });

  it("float32 OneHot is broken on wasm (canary), so selectedLogProbs builds it as int32 and casts", async () => {
    await useBackend(backend);
    const direct = tf.oneHot(tf.tensor1d([2, 0], "int32"), 3, 1, 0, "float32");
    const cast = tf.cast(tf.oneHot(tf.tensor1d([2, 0], "int32"), 3), "float32");
    expect(Array.from(cast.dataSync())).toEqual([0, 0, 1, 1, 0, 0]);
    if (backend === "wasm") expect(Array.from(direct.dataSync())).not.toEqual([0, 0, 1, 1, 0, 0]);
    else expect(Array.from(direct.dataSync())).toEqual([0, 0, 1, 1, 0, 0]);
    tf.dispose([direct, cast]);
  });
});

// On native the transposes go to sgemm as flags (matMulTransposing); the same checks apply. It
// joins when its addon is built, or must (PBRL_REQUIRE_NATIVE=1, CI with OpenBLAS).
const MATMUL_BACKENDS: BackendName[] = loadNativeAddon().ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? ["native", "wasm", "cpu"] : ["wasm", "cpu"];

describe.each<BackendName>(MATMUL_BACKENDS)("matMul without transposed kernels on %s", (backend) => {
  it.each([
    [false, false],
    [false, true],
    [true, false],
    [true, true],
  ])("transposeA=%s transposeB=%s: value and gradients equal tf.matMul's (2-D and batched)", async (ta, tb) => {
    await useBackend(backend);
    for (const batch of [[], [2, 3]]) {
      const aShape = [...batch, ...(ta ? [4, 5] : [5, 4])];
      const bShape = [...batch, ...(tb ? [6, 4] : [4, 6])];
      const a = tf.variable(tf.randomNormal(aShape, 0, 1, "float32", 1));
      const b = tf.variable(tf.randomNormal(bShape, 0, 1, "float32", 2));
      const w = tf.randomNormal([...batch, 5, 6], 0, 1, "float32", 3);
      const ours = tf.variableGrads(() => tf.sum(tf.mul(matMul(a, b, ta, tb), w)) as tf.Scalar, [a, b]);
      const ref = tf.variableGrads(() => tf.sum(tf.mul(tf.matMul(a, b, ta, tb), w)) as tf.Scalar, [a, b]);
      expect(ours.value.dataSync()[0]).toBeCloseTo(ref.value.dataSync()[0]!, 3);
      for (const v of [a, b]) {
        const x = ours.grads[v.name]!.dataSync();
        const y = ref.grads[v.name]!.dataSync();
        expect(ours.grads[v.name]!.shape).toEqual(v.shape);
        for (let i = 0; i < x.length; i++) expect(x[i]).toBeCloseTo(y[i]!, 4);
      }
      tf.dispose([a, b, w, ours.value, ref.value, ...Object.values(ours.grads), ...Object.values(ref.grads)]);
    }
  });

  it.each([false, true])(
    "a frozen weight (a variable that does not train: a LoRA base) is a constant of the product: its gradient is never computed (transposeB=%s)",
    async (tb) => {
      await useBackend(backend);
      const x = tf.variable(tf.randomNormal([3, 4], 0, 1, "float32", 6));
      const products = async (trainable: boolean) => {
        const w = tf.variable(tf.randomNormal(tb ? [5, 4] : [4, 5], 0, 1, "float32", 7), trainable);
        let grad: Float32Array | undefined;
        const profile = await tf.profile(() => {
          const { value, grads } = tf.variableGrads(() => tf.sum(tf.square(matMul(x, w, false, tb))) as tf.Scalar, [x]);
          grad = grads[x.name]!.dataSync() as Float32Array;
          tf.dispose([value, ...Object.values(grads)]);
        });
        w.dispose();
        return { grad: grad!, count: profile.kernels.filter((k) => k.name === "BatchMatMul" || k.name === "_FusedMatMul").length };
      };
      const trains = await products(true);
      const frozen = await products(false);
      // The forward product and x's gradient; a trainable w adds the product for its own gradient.
      expect(frozen.count).toBe(2);
      expect(trains.count).toBe(3);
      expect(frozen.grad).toEqual(trains.grad);
      x.dispose();
    },
  );

  it("sums the gradient of a broadcast operand over the batch (tf.matMul's own gradient does not)", async () => {
    await useBackend(backend);
    const x = tf.variable(tf.randomNormal([2, 3, 4], 0, 1, "float32", 4));
    const wt = tf.variable(tf.randomNormal([5, 4], 0, 1, "float32", 5));
    const ours = tf.variableGrads(() => tf.sum(matMul(x, wt, false, true)) as tf.Scalar, [x, wt]);
    expect(ours.grads[wt.name]!.shape).toEqual([5, 4]);
    // d/dW Σ x·Wᵀ: every row of W gets the sum of all x rows
    const colSums = tf.sum(tf.reshape(x, [6, 4]), 0).dataSync();
    const g = ours.grads[wt.name]!.dataSync();
    for (let r = 0; r < 5; r++) for (let c = 0; c < 4; c++) expect(g[r * 4 + c]).toBeCloseTo(colSums[c]!, 4);
    expect(() => tf.variableGrads(() => tf.sum(tf.matMul(x, wt, false, true)) as tf.Scalar, [x, wt])).toThrow(/does not match the shape/);
    tf.dispose([x, wt, ours.value, ...Object.values(ours.grads)]);
  });
});

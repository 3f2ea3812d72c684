import { describe, expect, it } from "vitest";
import { tf } from "@pbrl/core-tensor";
import { meanValueLoss, valueLoss, valueLossTerms } from "../src/index.js";

// Hand-computed: V = [1, 2, 0.5], R = [0, 2.5, 0.5].
const V = [1, 2, 0.5];
const R = [0, 2.5, 0.5];

describe("value loss", () => {
  it("unclipped: ½(V − R)² per sample, mean over samples, gradient (V − R)/n", () => {
    const t = valueLossTerms(V, R);
    expect(t.losses).toEqual([0.5, 0.125, 0]);
    expect(t.grads).toEqual([1, -0.5, 0]);
    expect(meanValueLoss(V, R)).toBeCloseTo(0.625 / 3, 12);
    const [loss, grad] = tf.tidy(() => {
      const { value, grad } = tf.valueAndGrad((v: tf.Tensor) => valueLoss(v as tf.Tensor1D, R))(tf.tensor1d(V));
      return [value.dataSync()[0]!, Array.from(grad.dataSync())] as const;
    });
    expect(loss).toBeCloseTo(0.625 / 3, 6);
    [1 / 3, -0.5 / 3, 0].forEach((x, i) => expect(grad[i]).toBeCloseTo(x, 6));
  });

  it("clipped (PPO): ½ max((V−R)², (V_c−R)²), V_c = V_old + clip(V − V_old, ±ε); no gradient where the clipped term wins", () => {
    // ε = 0.2, V_old = [0.5, 2.2, 1.0]:
    // 0: V−V_old = 0.5 → V_c = 0.7, (V−R)² = 1 > 0.49 → unclipped: ℓ = 0.5, grad 1
    // 1: V−V_old = −0.2 (inside) → V_c = V: ℓ = 0.125, grad −0.5
    // 2: V−V_old = −0.5 → V_c = 0.8, (V−R)² = 0 < 0.09 → clipped: ℓ = 0.045, grad 0
    const o = { oldValues: [0.5, 2.2, 1.0], clipRange: 0.2 };
    const t = valueLossTerms(V, R, o);
    t.losses.forEach((x, i) => expect(x).toBeCloseTo([0.5, 0.125, 0.045][i]!, 12));
    expect(t.grads).toEqual([1, -0.5, 0]);
    expect(t.clipped).toEqual([false, false, true]);
    expect(meanValueLoss(V, R, o)).toBeCloseTo(0.67 / 3, 12);
    const [loss, grad] = tf.tidy(() => {
      const { value, grad } = tf.valueAndGrad((v: tf.Tensor) => valueLoss(v as tf.Tensor1D, R, { ...o, denominator: 6 }))(tf.tensor1d(V));
      return [value.dataSync()[0]!, Array.from(grad.dataSync())] as const;
    });
    // A chunk of a 6-sample batch: Σℓ / 6.
    expect(loss).toBeCloseTo(0.67 / 6, 6);
    [1 / 6, -0.5 / 6, 0].forEach((x, i) => expect(grad[i]).toBeCloseTo(x, 6));
  });

  it("rejects a bad clip range, missing old values and length mismatches", () => {
    expect(() => valueLossTerms(V, R, { clipRange: 0.2 })).toThrow(/needs the old values/);
    expect(() => valueLossTerms(V, R, { oldValues: V, clipRange: 0 })).toThrow(/value_clip_range must be a finite number > 0/);
    expect(() => valueLossTerms(V, [1])).toThrow(/1 targets for 3 values/);
    expect(() => valueLossTerms(V, R, { oldValues: [1] })).toThrow(/1 old values for 3 values/);
  });
});

describe("value loss: ties, no clipping, the exact messages", () => {
  it("a tie between the two terms keeps the unclipped gradient", () => {
    // V = 1, R = 0, V_old = −1.5, ε = 0.5: V − V_old = 2.5 → clipped to 0.5 → V_c = −1.
    // (V − R)² = 1 = (V_c − R)²: a tie, so ℓ = ½ and dℓ/dV = V − R = 1, not clipped.
    const t = valueLossTerms([1], [0], { oldValues: [-1.5], clipRange: 0.5 });
    expect(t).toEqual({ losses: [0.5], grads: [1], clipped: [false] });
  });

  it("clipRange null (or absent) is no clipping even with old values given", () => {
    // V = 1, R = 0, V_old = 5: unclipped ℓ = ½, grad 1 (clipped with any ε it would be ½(5 − ε)²).
    expect(valueLossTerms([1], [0], { oldValues: [5], clipRange: null })).toEqual({ losses: [0.5], grads: [1], clipped: [false] });
    expect(valueLossTerms([1], [0], { oldValues: [5] })).toEqual({ losses: [0.5], grads: [1], clipped: [false] });
  });

  it("says which value is wrong and how to fix it", () => {
    expect(() => valueLossTerms(V, R, { oldValues: V, clipRange: -0.1 })).toThrow(
      /^value_clip_range must be a finite number > 0 \(or null for no clipping\), got -0.1$/,
    );
    expect(() => valueLossTerms(V, R, { oldValues: V, clipRange: Infinity })).toThrow(/^value_clip_range must be a finite number > 0 .*, got Infinity$/);
    expect(() => valueLossTerms(V, R, { oldValues: V, clipRange: NaN })).toThrow(/, got NaN$/);
    expect(() => valueLossTerms(V, R, { clipRange: 0.2 })).toThrow(/^value loss: clipping \(value_clip_range\) needs the old values$/);
    expect(() => valueLossTerms(V, [1])).toThrow(/^value loss: 1 targets for 3 values$/);
    expect(() => valueLossTerms(V, R, { oldValues: [1] })).toThrow(/^value loss: 1 old values for 3 values$/);
    expect(() => tf.tidy(() => valueLoss(tf.tensor1d(V), [1]))).toThrow(/^value loss: 1 targets for 3 values$/);
    expect(() => tf.tidy(() => valueLoss(tf.tensor1d(V), R, { denominator: 0 }))).toThrow(/^value loss: denominator must be > 0, got 0$/);
  });
});

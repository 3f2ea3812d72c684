// The Bradley–Terry loss and the pair metrics, against numbers worked out by hand.
import { describe, expect, it } from "vitest";
import { assertNoTensorLeak, tf } from "@pbrl/core-tensor";
import { bradleyTerryLoss, pairMetrics } from "../src/index.js";

// With σ(x) = 1 / (1 + e^−x): −log σ(ln 3) = ln(1 + 1/3) = ln(4/3), −log σ(0) = ln 2 and
// −log σ(−ln 3) = ln(1 + 3) = ln 4.
const LN3 = Math.log(3);

describe("bradleyTerryLoss", () => {
  it("is mean(−log σ(s_w − s_l))", async () => {
    // diffs [ln 3, 0, −ln 3]: (ln(4/3) + ln 2 + ln 4) / 3 = ln(4/3 · 2 · 4) / 3 = ln(32/3) / 3 ≈ 0.78903.
    await assertNoTensorLeak("bradleyTerryLoss", () => {
      const d = tf.tensor1d([LN3, 0, -LN3]);
      const loss = bradleyTerryLoss(d);
      expect(loss.shape).toEqual([]);
      expect(loss.dataSync()[0]).toBeCloseTo(Math.log(32 / 3) / 3, 5);
      tf.dispose([d, loss]);
    });
  });

  it("its gradient is −(1 − σ(d)) / n per pair", () => {
    // d/dd of softplus(−d) is −σ(−d) = −(1 − σ(d)); over n = 2 pairs, d = [ln 3, −ln 3]:
    // σ(ln 3) = 3/4 → −(1/4)/2 = −0.125; σ(−ln 3) = 1/4 → −(3/4)/2 = −0.375.
    const d = tf.tensor1d([LN3, -LN3]);
    const g = tf.grad((x) => bradleyTerryLoss(x as tf.Tensor1D))(d);
    const got = Array.from(g.dataSync());
    expect(got[0]).toBeCloseTo(-0.125, 5);
    expect(got[1]).toBeCloseTo(-0.375, 5);
    tf.dispose([d, g]);
  });
});

describe("pairMetrics", () => {
  it("averages −log σ(d), counts d > 0 strictly, and averages d", () => {
    // diffs [ln 3, 0, −ln 3, ln 3], n = 4:
    //   loss = (ln(4/3) + ln 2 + ln 4 + ln(4/3)) / 4 = ln(4/3 · 2 · 4 · 4/3) / 4 = ln(128/9) / 4 ≈ 0.66369
    //   accuracy = 2 / 4 = 0.5 (the tie d = 0 is no win)
    //   margin = (ln 3 + 0 − ln 3 + ln 3) / 4 = ln 3 / 4 ≈ 0.27465
    const m = pairMetrics([LN3, 0, -LN3, LN3]);
    expect(Object.keys(m).sort()).toEqual(["reward/accuracy", "reward/loss", "reward/margin"]);
    expect(m["reward/loss"]).toBeCloseTo(Math.log(128 / 9) / 4, 12);
    expect(m["reward/accuracy"]).toBe(0.5);
    expect(m["reward/margin"]).toBeCloseTo(LN3 / 4, 12);
  });

  it("takes a Float32Array and one pair", () => {
    // One pair d = −2: loss ln(1 + e²) ≈ 2.12693, accuracy 0, margin −2.
    const m = pairMetrics(Float32Array.from([-2]));
    expect(m["reward/loss"]).toBeCloseTo(Math.log(1 + Math.exp(2)), 6);
    expect(m["reward/accuracy"]).toBe(0);
    expect(m["reward/margin"]).toBe(-2);
  });
});

import { describe, expect, it } from "vitest";
import { tf } from "@pbrl/core-tensor";
import { policyGradientLoss } from "../src/index.js";

// Hand-computed: sequence log-probs [−1, −2, −0.5], advantages [2, 1, −4]:
// −Σ log π · A = −(−1·2 + −2·1 + −0.5·−4) = −(−2 − 2 + 2) = 2, over n = 3 rows: 2/3.
const LOG_PROBS = [-1, -2, -0.5];
const ADV = [2, 1, -4];

function lossAndGrad(logProbs: number[], adv: number[], n: number): [number, number[]] {
  return tf.tidy(() => {
    const { value, grad } = tf.valueAndGrad((s: tf.Tensor) => policyGradientLoss(s as tf.Tensor1D, adv, n))(tf.tensor1d(logProbs));
    return [value.dataSync()[0]!, Array.from(grad.dataSync())];
  });
}

describe("policy-gradient loss", () => {
  it("is Σ −log π · A / n, with gradient −A / n per row", () => {
    const [loss, grad] = lossAndGrad(LOG_PROBS, ADV, 3);
    expect(loss).toBeCloseTo(2 / 3, 6);
    [-2 / 3, -1 / 3, 4 / 3].forEach((g, i) => expect(grad[i]).toBeCloseTo(g, 6));
  });

  it("chunks divided by the whole batch's row count add up to the batch loss", () => {
    const [first] = lossAndGrad(LOG_PROBS.slice(0, 2), ADV.slice(0, 2), 3);
    const [second] = lossAndGrad(LOG_PROBS.slice(2), ADV.slice(2), 3);
    // −(−1·2 − 2·1)/3 = 4/3 and −(−0.5·−4)/3 = −2/3
    expect(first).toBeCloseTo(4 / 3, 6);
    expect(second).toBeCloseTo(-2 / 3, 6);
    expect(first + second).toBeCloseTo(2 / 3, 6);
  });

  it("a zero advantage contributes nothing, whatever the log-prob", () => {
    const [loss, grad] = lossAndGrad([-30, -1], [0, 1], 2);
    expect(loss).toBeCloseTo(0.5, 6);
    expect(grad[0]).toBeCloseTo(0, 6);
    expect(grad[1]).toBeCloseTo(-0.5, 6);
  });
});

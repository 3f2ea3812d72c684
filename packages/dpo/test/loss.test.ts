import { describe, expect, it } from "vitest";
import { tf } from "@pbrl/core-tensor";
import { agentLoss, jointMargins, madpoLoss, marginMetrics, negLogSigmoid, othersSum } from "../src/index.js";

describe("MADPO loss (hand-computed)", () => {
  it("−log σ(x) is stable at both ends", () => {
    expect(negLogSigmoid(0)).toBeCloseTo(Math.log(2), 12);
    expect(negLogSigmoid(2)).toBeCloseTo(Math.log(1 + Math.exp(-2)), 12);
    expect(negLogSigmoid(-800)).toBe(800);
    expect(negLogSigmoid(800)).toBe(0);
  });

  it("joint margins sum the agents; the loss averages −log σ(βΔ)", () => {
    const margins = [
      [1, -2, 4],
      [3, 1, -4],
    ];
    expect(jointMargins(margins)).toEqual([4, -1, 0]);
    const beta = 0.5;
    const expected = (negLogSigmoid(2) + negLogSigmoid(-0.5) + negLogSigmoid(0)) / 3;
    expect(madpoLoss([4, -1, 0], beta)).toBeCloseTo(expected, 12);
    expect(othersSum(margins, 0)).toEqual(Float32Array.from([3, 1, -4]));
    const m = marginMetrics(margins, beta);
    expect(m.loss).toBeCloseTo(expected, 12);
    expect(m["joint/margin"]).toBeCloseTo(1, 12);
    expect(m["joint/accuracy"]).toBeCloseTo(1 / 3, 12); // only Δ = 4 is > 0
    expect(m["agent_0/margin"]).toBeCloseTo(1, 12);
    expect(m["agent_1/margin"]).toBeCloseTo(0, 12);
  });

  it("agent i's loss gradient is −β σ(−βΔ)/P per pair, with the others held fixed", () => {
    const own = tf.variable(tf.tensor1d([1, -2]));
    const others = Float32Array.from([3, 1]);
    const beta = 0.5;
    const { value, grads } = tf.variableGrads(() => agentLoss(own, others, beta), [own]);
    const sig = (x: number) => 1 / (1 + Math.exp(-x));
    expect(value.dataSync()[0]).toBeCloseTo((negLogSigmoid(2) + negLogSigmoid(-0.5)) / 2, 6);
    const g = grads[own.name]!.dataSync();
    expect(g[0]).toBeCloseTo((-beta * sig(-2)) / 2, 6);
    expect(g[1]).toBeCloseTo((-beta * sig(0.5)) / 2, 6);
    tf.dispose([own, value, ...Object.values(grads)]);
  });
});

describe("tfjs canary", () => {
  it("tf.logSigmoid's gradient fails when its input is an intermediate (so agentLoss uses softplus)", () => {
    const x = tf.variable(tf.tensor1d([0.5, -1]));
    expect(() => tf.variableGrads(() => tf.sum(tf.logSigmoid(tf.mul(x, 2))) as tf.Scalar, [x])).toThrow();
    const ok = tf.variableGrads(() => tf.sum(tf.neg(tf.softplus(tf.mul(x, -2)))) as tf.Scalar, [x]);
    const g = ok.grads[x.name]!.dataSync();
    expect(g[0]).toBeCloseTo(2 / (1 + Math.exp(1)), 6); // d/dx log σ(2x) = 2 σ(−2x)
    tf.dispose([x, ok.value, ...Object.values(ok.grads)]);
  });
});

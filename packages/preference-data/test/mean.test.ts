import { describe, expect, it } from "vitest";
import { mean, meanOrNull, negLogSigmoid } from "../src/index.js";

describe("the shared small math (hand-computed)", () => {
  it("mean is 0 for no values, meanOrNull null; otherwise the arithmetic mean", () => {
    expect(mean([])).toBe(0);
    expect(meanOrNull([])).toBeNull();
    expect(mean([1, 2, 4.5])).toBe(2.5);
    expect(meanOrNull([-1, 0.5])).toBe(-0.25);
  });

  it("negLogSigmoid(x) = log(1 + e^−x), stable at both ends", () => {
    expect(negLogSigmoid(0)).toBeCloseTo(Math.log(2), 15);
    expect(negLogSigmoid(1)).toBeCloseTo(Math.log(1 + Math.exp(-1)), 15);
    expect(negLogSigmoid(-1)).toBeCloseTo(1 + Math.log(1 + Math.exp(-1)), 15);
    expect(negLogSigmoid(-800)).toBe(800);
    expect(negLogSigmoid(800)).toBe(0);
  });
});

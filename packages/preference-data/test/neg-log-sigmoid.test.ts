import { describe, expect, it } from "vitest";
import { negLogSigmoid } from "../src/index.js";

describe("the Bradley–Terry likelihood (hand-computed)", () => {
  it("negLogSigmoid(x) = log(1 + e^−x), stable at both ends", () => {
    expect(negLogSigmoid(0)).toBeCloseTo(Math.log(2), 15);
    expect(negLogSigmoid(1)).toBeCloseTo(Math.log(1 + Math.exp(-1)), 15);
    expect(negLogSigmoid(-1)).toBeCloseTo(1 + Math.log(1 + Math.exp(-1)), 15);
    expect(negLogSigmoid(-800)).toBe(800);
    expect(negLogSigmoid(800)).toBe(0);
  });
});

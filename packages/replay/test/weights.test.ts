import { describe, expect, it } from "vitest";
import { lambdaWeights, uniformWeights } from "../src/index.js";

describe("lambdaWeights", () => {
  it("λ = 0.5 over 3 datasets is [1/7, 2/7, 4/7] oldest → newest", () => {
    const w = lambdaWeights(3, 0.5);
    [1 / 7, 2 / 7, 4 / 7].forEach((v, i) => expect(w[i]).toBeCloseTo(v, 12));
  });

  it("λ = 0 keeps only the newest (0^0 = 1)", () => {
    expect(lambdaWeights(4, 0)).toEqual([0, 0, 0, 1]);
    expect(lambdaWeights(1, 0)).toEqual([1]);
  });

  it("λ = 1 weighs all datasets equally", () => {
    expect(lambdaWeights(4, 1)).toEqual([0.25, 0.25, 0.25, 0.25]);
  });

  it("λ = 0.6 over 4 datasets is 0.6^a normalised", () => {
    const raw = [0.216, 0.36, 0.6, 1];
    const sum = 2.176;
    lambdaWeights(4, 0.6).forEach((w, i) => expect(w).toBeCloseTo(raw[i]! / sum, 12));
  });

  it("no datasets gives no weights", () => {
    expect(lambdaWeights(0, 0.5)).toEqual([]);
  });

  it.each([-0.1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("rejects λ = %s", (lambda) => {
    expect(() => lambdaWeights(3, lambda)).toThrow(/lambda must be a number in \[0, 1\]/);
  });

  it("rejects a negative or fractional count", () => {
    expect(() => lambdaWeights(-1, 0.5)).toThrow(/non-negative integer/);
    expect(() => lambdaWeights(1.5, 0.5)).toThrow(/non-negative integer/);
  });
});

describe("uniformWeights", () => {
  it("gives 1/count each", () => {
    expect(uniformWeights(4)).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(uniformWeights(0)).toEqual([]);
  });
});

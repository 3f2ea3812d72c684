import { RngStream } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { allocateDraws, lambdaWeights } from "../src/index.js";

describe("allocateDraws", () => {
  it("shares of 20,000 draws over 4 datasets match λ = 0.6 weights (chi-square goodness of fit)", () => {
    const weights = lambdaWeights(4, 0.6);
    const total = 20_000;
    const counts = allocateDraws(weights, total, RngStream.fromSeed(1234, "replay"));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(total);
    const chi2 = counts.reduce((acc, c, i) => acc + (c - total * weights[i]!) ** 2 / (total * weights[i]!), 0);
    // 4 categories → 3 degrees of freedom; the 0.999 quantile of χ²(3) is 16.266, so a correct
    // sampler fails this with probability 0.001 for a random seed (and never for this fixed one).
    expect(chi2).toBeLessThan(16.266);
  });

  it("never draws a dataset of weight 0", () => {
    const counts = allocateDraws([0, 0, 1], 500, RngStream.fromSeed(7));
    expect(counts).toEqual([0, 0, 500]);
  });

  it("zero draws allocate nothing and consume nothing", () => {
    const rng = RngStream.fromSeed(7);
    const before = rng.getState();
    expect(allocateDraws([0.5, 0.5], 0, rng)).toEqual([0, 0]);
    expect(rng.getState()).toEqual(before);
  });

  it("is reproducible from the seed", () => {
    const a = allocateDraws([0.2, 0.3, 0.5], 1000, RngStream.fromSeed(99, "replay"));
    const b = allocateDraws([0.2, 0.3, 0.5], 1000, RngStream.fromSeed(99, "replay"));
    expect(a).toEqual(b);
  });

  it("rejects a negative or fractional number of draws", () => {
    expect(() => allocateDraws([1], -1, RngStream.fromSeed(1))).toThrow(/non-negative integer/);
    expect(() => allocateDraws([1], 2.5, RngStream.fromSeed(1))).toThrow(/non-negative integer/);
  });
});

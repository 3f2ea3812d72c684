import { describe, expect, it } from "vitest";
import { binEdges, distributionFile, histogram, rewardRange } from "../src/reward-distribution.js";

describe("reward distributions (hand-computed)", () => {
  it("17 evenly spaced edges over the range", () => {
    const e = binEdges(0, 3);
    expect(e).toHaveLength(17);
    expect(e[0]).toBe(0);
    expect(e[16]).toBe(3);
    expect(e[8]).toBeCloseTo(1.5, 12);
    expect(() => binEdges(1, 1)).toThrow(/min < max/);
  });

  it("bins are [a, b) except the last, values are clipped, non-finite dropped", () => {
    const e = binEdges(0, 16); // edges at integers
    const c = histogram([0, 0.5, 1, 15.5, 16, 20, -3, Number.NaN], e);
    expect(c[0]).toBe(3); // 0, 0.5 and the clipped −3
    expect(c[1]).toBe(1); // 1 opens bin 1
    expect(c[15]).toBe(3); // 15.5, the upper edge 16, and the clipped 20
    expect(c.reduce((a, b) => a + b, 0)).toBe(7);
  });

  it("writes CoMLRL's file layout: counts sum to the values, no density", () => {
    const f = distributionFile(2, [0, 3], { target: [0, 0.5, 1.5, 3], comparator: [] }, { target: [1], comparator: [2] });
    expect(f.iteration).toBe(2);
    expect(f.candidate.target.counts.reduce((a, b) => a + b, 0)).toBe(4);
    expect(f.candidate.target.mean).toBeCloseTo(1.25, 12);
    expect(f.candidate.comparator).toEqual({ sample_count: 0, mean: null, counts: new Array(16).fill(0), raw_rewards: [] });
    expect(f.bin_centers[0]).toBeCloseTo(3 / 32, 12);
    expect(JSON.stringify(f)).not.toContain("density");
  });

  it("uses the declared range, else the observed one", () => {
    expect(rewardRange([0, 1], [5])).toEqual([0, 1]);
    expect(rewardRange(undefined, [0.2, 0.7, 0.4])).toEqual([0.2, 0.7]);
    expect(rewardRange(undefined, [2, 2])).toEqual([1.5, 2.5]);
  });
});

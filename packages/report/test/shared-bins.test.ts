import { describe, expect, it } from "vitest";
import {
  binEdges,
  histogram,
  parseRewardDistribution,
  rewardDistributionSvg,
  roundHistograms,
  sharedBins,
  RewardDistributionFormatError,
} from "../src/index.js";
import { assertBalanced, count, distribution } from "./fixtures.js";

describe("histogram", () => {
  it("bins like the trainers: [a, b) except the last bin, clipped into the range", () => {
    const edges = binEdges(0, 1, 4);
    expect(edges).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(histogram([0, 0.25, 0.5, 0.99, 1, -3, 7, Number.NaN], edges)).toEqual([2, 1, 1, 3]);
  });
});

describe("sharedBins", () => {
  it("uses the range all rounds share (a declared reward_range)", () => {
    const files = [
      distribution(1, [0, 1], [0.1], [0.2], { target: [], comparator: [] }),
      distribution(2, [0, 1], [0.9], [0.95], { target: [], comparator: [] }),
    ].map(parseRewardDistribution);
    const bins = sharedBins(files)!;
    expect(bins.source).toBe("common");
    expect(bins.edges[0]).toBe(0);
    expect(bins.edges[16]).toBe(1);
  });

  it("re-bins rounds with different observed ranges on the range of all raw values", () => {
    const r1 = parseRewardDistribution(distribution(1, null, [0, 1], [0.5], { target: [0], comparator: [1] }));
    const r2 = parseRewardDistribution(distribution(2, null, [2, 3], [4], { target: [4], comparator: [2] }));
    const bins = sharedBins([r1, r2])!;
    expect(bins.source).toBe("raw");
    expect([bins.edges[0], bins.edges[16]]).toEqual([0, 4]);
    const h1 = roundHistograms(r1, bins.edges);
    const h2 = roundHistograms(r2, bins.edges);
    // 0 → bin 0, 1 → bin 4 (width 0.25), 0.5 → bin 2; 2 → bin 8, 3 → bin 12, 4 → last bin
    expect(h1.candidate.target.flatMap((c, i) => (c > 0 ? [i] : []))).toEqual([0, 4]);
    expect(h1.candidate.comparator.flatMap((c, i) => (c > 0 ? [i] : []))).toEqual([2]);
    expect(h2.candidate.target.flatMap((c, i) => (c > 0 ? [i] : []))).toEqual([8, 12]);
    expect(h2.candidate.comparator.flatMap((c, i) => (c > 0 ? [i] : []))).toEqual([15]);
    expect(h2.selected!.target.reduce((a, b) => a + b, 0)).toBe(1);
    expect(h1.approximate || h2.approximate).toBe(false);
  });

  it("falls back to the union of recorded ranges, moving counts by bin centre, for files without raw values", () => {
    const a = distribution(1, null, [0, 1], [0.5], { target: [], comparator: [] });
    const b = distribution(2, null, [1, 2], [1.5], { target: [], comparator: [] });
    for (const s of [a.candidate.target, a.candidate.comparator, b.candidate.target, b.candidate.comparator] as { raw_rewards?: number[] }[])
      delete s.raw_rewards;
    const files = [a, b].map(parseRewardDistribution);
    const bins = sharedBins(files)!;
    expect(bins.source).toBe("recorded");
    expect([bins.edges[0], bins.edges[16]]).toEqual([0, 2]);
    const h = roundHistograms(files[0]!, bins.edges);
    expect(h.approximate).toBe(true);
    expect(h.candidate.target.reduce((x, y) => x + y, 0)).toBe(2);
  });

  it("is null without files", () => {
    expect(sharedBins([])).toBeNull();
  });
});

describe("rewardDistributionSvg", () => {
  const file = distribution(3, [0, 1], [0.1, 0.1, 0.6], [0.2, 0.9], { target: [0.6], comparator: [0.2] });

  it("draws candidates and selected pairs, target orange and comparator grey, as a standalone SVG", () => {
    const svg = rewardDistributionSvg(JSON.parse(JSON.stringify(file)));
    expect(svg.startsWith(`<svg xmlns="http://www.w3.org/2000/svg"`)).toBe(true);
    expect(svg).toContain("Round 3: all candidates");
    expect(svg).toContain("Round 3: selected pairs");
    // candidates: target bins {0.1, 0.6} → 2 bars, comparator {0.2, 0.9} → 2 bars; selected: 1 + 1
    expect(count(svg, "<rect data-bar")).toBe(6);
    expect(svg).toContain('fill="#e87030"');
    expect(svg).toContain('fill="#6e6e6e"');
    expect(svg).toContain(">reward<");
    expect(svg).toContain(">count<");
    assertBalanced(svg);
  });

  it("refuses what is not a distribution file, naming the problem", () => {
    expect(() => rewardDistributionSvg({ iteration: 1 })).toThrow(RewardDistributionFormatError);
    expect(() => rewardDistributionSvg({ ...file, bin_edges: [0, 1] })).toThrow(/bin_edges: has 2 edges for 16 bins/);
  });
});

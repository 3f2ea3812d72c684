import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { nonTiedPairs, selectPairs } from "../src/index.js";

describe("pair selection (hand-computed)", () => {
  // candidates: 0 → 0.5, 1 → 0.9, 2 → 0.5 (tie with 0), 3 → 0.1
  const rewards = [0.5, 0.9, 0.5, 0.1];

  it("enumerates every non-tied pair once, winner first, ties dropped", () => {
    expect(nonTiedPairs(rewards).map((c) => c.pair)).toEqual([
      [0, 3],
      [1, 0],
      [1, 2],
      [1, 3],
      [2, 3],
    ]);
    expect(nonTiedPairs([0.3, 0.3, 0.3])).toEqual([]);
  });

  it("reward_gap: largest gap first, equal gaps in enumeration order, then the limit", () => {
    // gaps: (0,3) .4, (1,0) .4, (1,2) .4, (1,3) .8, (2,3) .4
    expect(selectPairs(rewards, "reward_gap", null)).toEqual([
      [1, 3],
      [0, 3],
      [1, 0],
      [1, 2],
      [2, 3],
    ]);
    expect(selectPairs(rewards, "reward_gap", 2)).toEqual([
      [1, 3],
      [0, 3],
    ]);
  });

  it("all: every non-tied pair, and the limit must be null", () => {
    expect(selectPairs(rewards, "all", null)).toHaveLength(5);
    expect(() => selectPairs(rewards, "all", 3)).toThrow(/preference_pairs_per_sample must be null/);
  });

  it("random: a seeded choice among non-tied pairs, reproducible", () => {
    const a = selectPairs(rewards, "random", 3, RngStream.fromSeed(1, "pairs"));
    expect(a).toHaveLength(3);
    expect(selectPairs(rewards, "random", 3, RngStream.fromSeed(1, "pairs"))).toEqual(a);
    const all = nonTiedPairs(rewards).map((c) => c.pair.join());
    for (const p of a) expect(all).toContain(p.join());
    const seen = new Set<string>();
    for (let s = 0; s < 20; s++) seen.add(JSON.stringify(selectPairs(rewards, "random", 3, RngStream.fromSeed(s, "pairs"))));
    expect(seen.size).toBeGreaterThan(1);
  });

  it("an item whose candidates all tie gives nothing in every mode", () => {
    for (const mode of ["reward_gap", "random"] as const) expect(selectPairs([1, 1], mode, 4, RngStream.fromSeed(0))).toEqual([]);
    expect(selectPairs([1, 1], "all", null)).toEqual([]);
  });
});

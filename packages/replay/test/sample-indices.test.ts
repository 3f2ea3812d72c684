import { RngStream } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { sampleIndices } from "../src/index.js";

function occurrences(indices: readonly number[], size: number): number[] {
  const counts = new Array<number>(size).fill(0);
  for (const i of indices) counts[i]! += 1;
  return counts;
}

describe("sampleIndices", () => {
  it("has no repeats while count ≤ size", () => {
    const rng = RngStream.fromSeed(3);
    for (const count of [0, 1, 5, 9, 10]) {
      const picked = sampleIndices(10, count, rng);
      expect(picked).toHaveLength(count);
      expect(new Set(picked).size).toBe(count);
      for (const i of picked) expect(i >= 0 && i < 10).toBe(true);
    }
  });

  it("count = size is a permutation of the dataset", () => {
    expect([...sampleIndices(7, 7, RngStream.fromSeed(4))].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it("count = 2·size + r uses every index 2 or 3 times, exactly r of them 3 times", () => {
    const size = 7;
    const rng = RngStream.fromSeed(5);
    for (const r of [0, 1, 3, 6]) {
      const picked = sampleIndices(size, 2 * size + r, rng);
      expect(picked).toHaveLength(2 * size + r);
      const counts = occurrences(picked, size);
      expect(counts.every((c) => c === 2 || c === 3)).toBe(true);
      expect(counts.filter((c) => c === 3)).toHaveLength(r);
    }
  });

  it("cycles through fresh permutations: each block of `size` is a permutation", () => {
    const size = 5;
    const picked = sampleIndices(size, 3 * size, RngStream.fromSeed(6));
    for (let b = 0; b < 3; b++) expect([...picked.slice(b * size, (b + 1) * size)].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4]);
    // Fresh permutations, not one repeated: with this seed the blocks differ.
    expect(picked.slice(0, size)).not.toEqual(picked.slice(size, 2 * size));
  });

  it("is reproducible from the seed", () => {
    expect(sampleIndices(20, 33, RngStream.fromSeed(8))).toEqual(sampleIndices(20, 33, RngStream.fromSeed(8)));
  });

  it("refuses to draw from an empty dataset", () => {
    expect(sampleIndices(0, 0, RngStream.fromSeed(1))).toEqual([]);
    expect(() => sampleIndices(0, 2, RngStream.fromSeed(1))).toThrow(/empty dataset/);
  });
});

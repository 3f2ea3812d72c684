import { describe, expect, it } from "vitest";
import { bucketRuns, DEFAULT_BUCKET_BYTES } from "../src/index.js";

describe("bucketRuns (gradients grouped for their all-reduce)", () => {
  it("fills each bucket up to the cap, in order", () => {
    expect(bucketRuns([4, 4, 4, 4, 4], 8)).toEqual([[0, 1], [2, 3], [4]]);
    expect(bucketRuns([3, 5, 1, 7], 8)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it("gives a tensor larger than the cap a bucket of its own", () => {
    expect(bucketRuns([2, 20, 2, 2], 8)).toEqual([[0], [1], [2, 3]]);
    expect(bucketRuns([20], 8)).toEqual([[0]]);
  });

  it("has no bucket for no tensors, and refuses a cap that holds nothing", () => {
    expect(bucketRuns([], 8)).toEqual([]);
    expect(() => bucketRuns([1], 0)).toThrow(/cap must be above 0/);
  });

  it("uses DistributedDataParallel's 25 MB: a 135M-parameter model's float32 gradients: the embedding alone, the layers packed to the cap", () => {
    expect(DEFAULT_BUCKET_BYTES).toBe(25 * 1024 * 1024);
    const layer = [576 * 576, 192 * 576, 192 * 576, 576 * 576, 1536 * 576, 1536 * 576, 576 * 1536, 576, 576].map((n) => n * 4);
    const sizes = [49152 * 576 * 4, ...Array.from({ length: 30 }, () => layer).flat()];
    const runs = bucketRuns(sizes, DEFAULT_BUCKET_BYTES);
    expect(runs.flat()).toEqual(sizes.map((_, i) => i));
    expect(runs[0]).toEqual([0]);
    const rest = sizes.slice(1).reduce((a, b) => a + b, 0);
    expect(runs.length).toBeGreaterThanOrEqual(1 + Math.ceil(rest / DEFAULT_BUCKET_BYTES));
    expect(runs.length).toBeLessThanOrEqual(1 + 2 * Math.ceil(rest / DEFAULT_BUCKET_BYTES));
    for (const run of runs.slice(1)) expect(run.reduce((a, i) => a + sizes[i]!, 0)).toBeLessThanOrEqual(DEFAULT_BUCKET_BYTES);
  });
});

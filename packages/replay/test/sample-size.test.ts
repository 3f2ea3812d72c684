import { describe, expect, it } from "vitest";
import { defaultSampleSize } from "../src/index.js";

const entry = (iteration: number, num_pairs: number) => ({ iteration, file: `iteration_000${iteration}.json`, num_pairs });

describe("defaultSampleSize", () => {
  it("is this round's pair count when it has pairs", () => {
    expect(defaultSampleSize(5, [entry(1, 9), entry(2, 5)])).toBe(5);
  });

  it("falls back to the newest non-empty dataset's size for an empty round", () => {
    expect(defaultSampleSize(0, [entry(1, 9), entry(3, 4)])).toBe(4);
    expect(defaultSampleSize(0, [entry(1, 9), entry(3, 0)])).toBe(9);
  });

  it("is 0 with no pairs anywhere", () => {
    expect(defaultSampleSize(0, [])).toBe(0);
  });
});

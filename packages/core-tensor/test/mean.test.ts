import { describe, expect, it } from "vitest";
import { mean, meanOrNull } from "../src/index.js";

describe("mean (hand-computed)", () => {
  it("mean is 0 for no values, meanOrNull null; otherwise the arithmetic mean", () => {
    expect(mean([])).toBe(0);
    expect(meanOrNull([])).toBeNull();
    expect(mean([1, 2, 4.5])).toBe(2.5);
    expect(meanOrNull([-1, 0.5])).toBe(-0.25);
  });
});

import { describe, expect, it } from "vitest";
import { rooflineFraction, rooflineSeconds, tokenFlops } from "../src/bench/roofline.js";

// 10 product weights, one layer, attention 2 wide, float32: a token at context c costs 20 + 8c FLOPs.
const model = { matmulParameters: 10, layers: 1, attentionWidth: 2, bytesPerWeight: 4 };

describe("roofline", () => {
  it("counts 2 FLOPs per weight and 4 per attended key and width", () => {
    expect(tokenFlops(model, 3)).toBe(44);
  });

  it("bandwidth-bound steps: the prompt once, then one read of the weights per step", () => {
    // Prompt: contexts 1 and 2, 28 + 36 = 64 FLOPs at 100/s = 0.64 s. Weights: 40 bytes at 10/s = 4 s
    // per step, above 3 rows' 132 (context 3) and 156 (context 4) FLOPs; the first token is the prompt pass's.
    const w = { prompts: 1, promptLen: 2, rows: 3, newTokens: 3 };
    expect(rooflineSeconds(model, w, { flopsPerS: 100, readBytesPerS: 10 })).toBeCloseTo(0.64 + 4 + 4, 12);
    expect(rooflineFraction(model, w, { flopsPerS: 100, readBytesPerS: 10 }, 17.28)).toBeCloseTo(0.5, 12);
  });

  it("compute-bound steps: every row's FLOPs, and each prompt's pass once", () => {
    const peak = { flopsPerS: 100, readBytesPerS: 1000 };
    expect(rooflineSeconds(model, { prompts: 1, promptLen: 2, rows: 3, newTokens: 3 }, peak)).toBeCloseTo(0.64 + 1.32 + 1.56, 12);
    expect(rooflineSeconds(model, { prompts: 2, promptLen: 2, rows: 6, newTokens: 3 }, peak)).toBeCloseTo(1.28 + 2.64 + 3.12, 12);
  });

  it("refuses a peak or a time that is not positive", () => {
    const w = { prompts: 1, promptLen: 2, rows: 3, newTokens: 3 };
    expect(() => rooflineSeconds(model, w, { flopsPerS: 0, readBytesPerS: 10 })).toThrow(/must be > 0/);
    expect(() => rooflineFraction(model, w, { flopsPerS: 100, readBytesPerS: 10 }, 0)).toThrow(/measured seconds/);
  });
});

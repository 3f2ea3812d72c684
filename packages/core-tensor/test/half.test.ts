import { describe, expect, it } from "vitest";
import { bf16BitsToFloat32, f16BitsToFloat32, float32ToBf16Bits, float32ToF16Bits } from "../src/index.js";

describe("f16", () => {
  it("decodes known bit patterns", () => {
    expect(f16BitsToFloat32(0x3c00)).toBe(1);
    expect(f16BitsToFloat32(0xc000)).toBe(-2);
    expect(f16BitsToFloat32(0x7bff)).toBe(65504);
    expect(f16BitsToFloat32(0x0001)).toBe(2 ** -24);
    expect(f16BitsToFloat32(0x7c00)).toBe(Infinity);
    expect(Number.isNaN(f16BitsToFloat32(0x7e00))).toBe(true);
    expect(Object.is(f16BitsToFloat32(0x8000), -0)).toBe(true);
  });

  it("round-trips every finite half value exactly", () => {
    for (let bits = 0; bits < 0x10000; bits++) {
      const exp = (bits >>> 10) & 0x1f;
      if (exp === 0x1f) continue;
      expect(float32ToF16Bits(f16BitsToFloat32(bits))).toBe(bits);
    }
  });

  it("rounds to nearest even, overflows to infinity, underflows to zero", () => {
    // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0)
    expect(float32ToF16Bits(1 + 2 ** -11)).toBe(0x3c00);
    // 1 + 3·2^-11 lies halfway between 1+2^-10 (odd) and 1+2^-9 (even)
    expect(float32ToF16Bits(1 + 3 * 2 ** -11)).toBe(0x3c02);
    expect(float32ToF16Bits(70000)).toBe(0x7c00);
    expect(float32ToF16Bits(1e-9)).toBe(0);
    expect(float32ToF16Bits(3 * 2 ** -26)).toBe(0x0001); // 0.75 of the smallest subnormal rounds up
  });
});

describe("bf16", () => {
  it("decodes and rounds to nearest even", () => {
    expect(bf16BitsToFloat32(0x3f80)).toBe(1);
    expect(float32ToBf16Bits(1)).toBe(0x3f80);
    expect(float32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80); // tie → even
    expect(float32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82); // tie → even (up)
    expect(float32ToBf16Bits(-Infinity)).toBe(0xff80);
    expect(Number.isNaN(bf16BitsToFloat32(float32ToBf16Bits(NaN)))).toBe(true);
  });
});

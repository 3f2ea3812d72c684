/** IEEE half (F16) and bfloat16 conversions to and from float32, round-to-nearest-even. */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function bf16BitsToFloat32(bits: number): number {
  u32[0] = bits << 16;
  return f32[0]!;
}

export function float32ToBf16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  if ((x & 0x7fffffff) > 0x7f800000) return ((x >>> 16) | 0x40) & 0xffff; // NaN stays a quiet NaN
  const roundingBias = 0x7fff + ((x >>> 16) & 1);
  return ((x + roundingBias) >>> 16) & 0xffff;
}

export function f16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function float32ToF16Bits(value: number): number {
  f32[0] = value;
  const x = u32[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0); // Inf or NaN
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow to infinity
  if (e <= 0) {
    if (e < -10) return sign; // underflows to ±0
    mant |= 0x800000; // implicit leading one
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rounded = mant + half - 1 + ((mant >>> shift) & 1);
    return sign | (rounded >>> shift);
  }
  // Normal: round the 23-bit mantissa to 10 bits, nearest-even; a carry may bump the exponent.
  const rounded = mant + 0xfff + ((mant >>> 13) & 1);
  const bits = (e << 10) + (rounded >>> 13);
  return bits >= 0x7c00 ? sign | 0x7c00 : sign | bits;
}

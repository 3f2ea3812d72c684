import type { CausalLMConfig } from "./config.js";

const f = Math.fround;

/**
 * Rotary inverse frequencies, computed in float32 steps as transformers does
 * (1 / theta^(2i/d), then the scaling rule), so angles round the same way.
 */
export function ropeInvFreq(c: CausalLMConfig): Float32Array {
  const half = c.headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(Math.pow(c.ropeTheta, f(f(2 * i) / c.headDim))));
  const s = c.ropeScaling;
  if (s.type === "linear") for (let i = 0; i < half; i++) inv[i] = f(inv[i]! / s.factor);
  if (s.type === "llama3") {
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i]!;
      if (wavelen > lowWavelen) inv[i] = f(inv[i]! / s.factor);
      else if (wavelen >= highWavelen) {
        const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = f((1 - smooth) * (inv[i]! / s.factor) + smooth * inv[i]!);
      }
    }
  }
  return inv;
}

/**
 * cos and sin tables for the given positions, laid out [positions.length, headDim] with the
 * frequencies repeated twice along the last axis (the rotate-half convention of transformers).
 */
export function ropeTables(invFreq: Float32Array, positions: ArrayLike<number>): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const dim = half * 2;
  const cos = new Float32Array(positions.length * dim);
  const sin = new Float32Array(positions.length * dim);
  for (let p = 0; p < positions.length; p++) {
    const pos = positions[p]!;
    for (let i = 0; i < half; i++) {
      const angle = f(invFreq[i]! * pos);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[p * dim + i] = c;
      cos[p * dim + half + i] = c;
      sin[p * dim + i] = s;
      sin[p * dim + half + i] = s;
    }
  }
  return { cos, sin };
}

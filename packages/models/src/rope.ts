import type { CausalLMConfig, RopeSpec } from "./config.js";

const f = Math.fround;

/**
 * Rotary inverse frequencies over `rotaryDim` dimensions, computed in float32 steps as
 * transformers does (1 / theta^(2i/d), then the scaling rule), so angles round the same way.
 * For longrope, `long` picks the long factors instead of the short ones.
 */
export function invFreqOf(rope: RopeSpec, rotaryDim: number, long = false): Float32Array {
  const half = rotaryDim / 2;
  const inv = new Float32Array(half);
  const s = rope.scaling;
  if (s.type === "longrope") {
    // _compute_longrope_parameters: 1 / (factor · theta^(2i/d)), the factor a float32 tensor.
    const factors = long ? s.longFactor : s.shortFactor;
    for (let i = 0; i < half; i++) inv[i] = f(1 / f(f(factors[i]!) * f(Math.pow(rope.theta, f(f(2 * i) / rotaryDim)))));
    return inv;
  }
  for (let i = 0; i < half; i++) inv[i] = f(1 / f(Math.pow(rope.theta, f(f(2 * i) / rotaryDim))));
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

/** The global rotary embedding's inverse frequencies (longrope: the short factors). */
export function ropeInvFreq(c: CausalLMConfig): Float32Array {
  return invFreqOf({ theta: c.ropeTheta, scaling: c.ropeScaling }, c.rotaryDim);
}

/**
 * cos and sin tables for the given positions, laid out [positions.length, 2·invFreq.length] with
 * the frequencies repeated twice along the last axis (the rotate-half convention of
 * transformers), each multiplied by `scale` in float32 (longrope's attention factor).
 */
export function ropeTables(invFreq: Float32Array, positions: ArrayLike<number>, scale = 1): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const dim = half * 2;
  const cos = new Float32Array(positions.length * dim);
  const sin = new Float32Array(positions.length * dim);
  const k = f(scale);
  for (let p = 0; p < positions.length; p++) {
    const pos = positions[p]!;
    for (let i = 0; i < half; i++) {
      const angle = f(invFreq[i]! * pos);
      const c = k === 1 ? Math.cos(angle) : f(f(Math.cos(angle)) * k);
      const s = k === 1 ? Math.sin(angle) : f(f(Math.sin(angle)) * k);
      cos[p * dim + i] = c;
      cos[p * dim + half + i] = c;
      sin[p * dim + i] = s;
      sin[p * dim + half + i] = s;
    }
  }
  return { cos, sin };
}

/**
 * One rotary embedding of a model (Gemma 3 has a second for its local layers): the tables of a
 * forward call's positions. LongRoPE picks its factors per call, as transformers'
 * dynamic_rope_update does: the long ones when the call's largest position + 1 exceeds
 * original_max_position_embeddings (over the whole batch), the short ones otherwise. With
 * `lengths` (each row's real length, padding excluded) it picks per row instead, as if each
 * sequence ran alone, so that a sequence scores the same in any batch.
 */
export class RotaryEmbedding {
  private readonly short: Float32Array;
  private readonly long: Float32Array | undefined;

  constructor(
    private readonly rope: RopeSpec,
    readonly rotaryDim: number,
  ) {
    this.short = invFreqOf(rope, rotaryDim);
    this.long = rope.scaling.type === "longrope" ? invFreqOf(rope, rotaryDim, true) : undefined;
  }

  /** Whether a forward pass over `length` positions uses longrope's long factors. */
  usesLongFactors(length: number): boolean {
    const s = this.rope.scaling;
    return s.type === "longrope" && length > s.originalMaxPositionEmbeddings;
  }

  /** cos and sin [positions.length, rotary_dim]; `lengths` has one entry per row of `positions`. */
  tables(positions: ArrayLike<number>, lengths?: ArrayLike<number>): { cos: Float32Array; sin: Float32Array } {
    const s = this.rope.scaling;
    if (s.type !== "longrope") return ropeTables(this.short, positions);
    const pick = (length: number) => (this.usesLongFactors(length) ? this.long! : this.short);
    if (lengths === undefined) {
      let max = 0;
      for (let i = 0; i < positions.length; i++) max = Math.max(max, positions[i]!);
      return ropeTables(pick(max + 1), positions, s.attentionFactor);
    }
    const t = positions.length / lengths.length;
    const cos = new Float32Array(positions.length * this.rotaryDim);
    const sin = new Float32Array(positions.length * this.rotaryDim);
    for (let r = 0; r < lengths.length; r++) {
      const rowPositions = Array.from({ length: t }, (_, i) => positions[r * t + i]!);
      const row = ropeTables(pick(lengths[r]!), rowPositions, s.attentionFactor);
      cos.set(row.cos, r * t * this.rotaryDim);
      sin.set(row.sin, r * t * this.rotaryDim);
    }
    return { cos, sin };
  }
}

/**
 * Next-token choice from one row of logits, on the host. Sampling follows transformers' warper
 * order — temperature, then top-k, then top-p — and draws from a seeded stream.
 */
import type { RngStream } from "@pbrl/core-tensor";

export interface SamplingOptions {
  /** Always take the most likely token (ties: the lowest id, as torch.argmax). */
  greedy: boolean;
  /** Divides the logits; must be > 0 when sampling. */
  temperature: number;
  /** Keep only the k most likely tokens (ties with the k-th kept); 0 disables. */
  topK: number;
  /** Keep the smallest set of most likely tokens whose probability reaches top_p; 1 disables. */
  topP: number;
}

export function validateSampling(o: SamplingOptions): void {
  if (o.greedy) return;
  if (!(o.temperature > 0) || !Number.isFinite(o.temperature)) throw new RangeError(`temperature must be > 0 when sampling, got ${o.temperature}`);
  if (!Number.isInteger(o.topK) || o.topK < 0) throw new RangeError(`top_k must be an integer ≥ 0 (0 disables), got ${o.topK}`);
  if (!(o.topP > 0 && o.topP <= 1)) throw new RangeError(`top_p must be in (0, 1], got ${o.topP}`);
}

export function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/** Probabilities after temperature, top-k and top-p (zeros for removed tokens). */
export function samplingDistribution(row: ArrayLike<number>, o: SamplingOptions): Float64Array {
  const v = row.length;
  const z = new Float64Array(v);
  for (let i = 0; i < v; i++) z[i] = row[i]! / o.temperature;
  if (o.topK === 0 && o.topP === 1) return softmaxInPlace(z);
  const keep = new Uint8Array(v).fill(1);
  if (o.topK > 0 && o.topK < v) {
    const sorted = Float64Array.from(z).sort();
    const kth = sorted[v - o.topK]!;
    for (let i = 0; i < v; i++) if (z[i]! < kth) keep[i] = 0;
  }
  let max = -Infinity;
  for (let i = 0; i < v; i++) if (keep[i] && z[i]! > max) max = z[i]!;
  const p = new Float64Array(v);
  let total = 0;
  for (let i = 0; i < v; i++) {
    if (!keep[i]) continue;
    p[i] = Math.exp(z[i]! - max);
    total += p[i]!;
  }
  for (let i = 0; i < v; i++) p[i]! /= total;
  if (o.topP < 1) {
    // transformers drops, in ascending order, tokens whose cumulative mass stays ≤ 1 − top_p,
    // always keeping the most likely token.
    const order = Array.from({ length: v }, (_, i) => i)
      .filter((i) => keep[i])
      .sort((a, b) => p[a]! - p[b]! || a - b);
    let cum = 0;
    for (let j = 0; j < order.length - 1; j++) {
      cum += p[order[j]!]!;
      if (cum <= 1 - o.topP) p[order[j]!] = 0;
      else break;
    }
    let kept = 0;
    for (let i = 0; i < v; i++) kept += p[i]!;
    for (let i = 0; i < v; i++) p[i]! /= kept;
  }
  return p;
}

/**
 * softmax(z), computed in z: the same operations in the same order as the general path with
 * nothing removed, without its keep mask and second array (sampling runs once per row per token).
 */
function softmaxInPlace(z: Float64Array): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < z.length; i++) if (z[i]! > max) max = z[i]!;
  let total = 0;
  for (let i = 0; i < z.length; i++) {
    z[i] = Math.exp(z[i]! - max);
    total += z[i]!;
  }
  for (let i = 0; i < z.length; i++) z[i]! /= total;
  return z;
}

/** Chooses the next token for one row of logits. */
export function chooseToken(row: ArrayLike<number>, o: SamplingOptions, rng: RngStream | undefined): number {
  if (o.greedy) return argmax(row);
  if (rng === undefined) throw new Error("sampling needs a seeded RngStream (pass rng, or use greedy decoding)");
  const p = samplingDistribution(row, o);
  let u = rng.random();
  let last = 0;
  for (let i = 0; i < p.length; i++) {
    if (p[i]! === 0) continue;
    last = i;
    u -= p[i]!;
    if (u < 0) return i;
  }
  return last;
}

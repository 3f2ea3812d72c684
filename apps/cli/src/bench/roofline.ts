/**
 * The time generation cannot beat on this machine: the prompt's arithmetic once, then per new
 * token whichever is slower, the rows' arithmetic or one read of the weights. Peak and bandwidth
 * are measured in the same run as the generation they judge (machine-peak.ts), so a loaded or
 * throttled machine lowers both sides alike.
 */

/** A model's sizes as generation's arithmetic and memory traffic see them. */
export interface RooflineModel {
  /** Weights every token multiplies: the layers' projections and the output head (embedding lookups are not products). */
  matmulParameters: number;
  layers: number;
  /** Query heads × head dim: the width of attention's two products (scores, weighted values). */
  attentionWidth: number;
  /** Bytes of one weight as decoding reads it: 4 in float32, 2 for bfloat16 copies. */
  bytesPerWeight: number;
}

/** One generate call: `prompts` prompts of `promptLen` tokens, `rows` rows (prompts × candidates), `newTokens` steps. */
export interface RooflineWorkload {
  prompts: number;
  promptLen: number;
  rows: number;
  newTokens: number;
}

/** What this machine did in the same run: float32 GEMM FLOP/s and bytes read per second. */
export interface MachinePeak {
  flopsPerS: number;
  readBytesPerS: number;
}

/** Forward FLOPs of one token attending to `context` positions: 2 per weight, and 2 × 2 per attended key and width. */
export function tokenFlops(m: RooflineModel, context: number): number {
  return 2 * m.matmulParameters + 4 * m.layers * m.attentionWidth * context;
}

/**
 * Seconds at the roofline. The prompt pass is counted once per prompt (its keys and values serve
 * all of the prompt's rows); its token at position p attends to p + 1 keys. Step s (s = 1 …
 * newTokens − 1; the first token comes from the prompt pass) runs every row's token at context
 * promptLen + s, and takes the longer of its FLOPs at the peak and one read of the weights.
 */
export function rooflineSeconds(m: RooflineModel, w: RooflineWorkload, peak: MachinePeak): number {
  if (!(peak.flopsPerS > 0) || !(peak.readBytesPerS > 0))
    throw new RangeError(`roofline: peak FLOP/s and read bandwidth must be > 0, got ${peak.flopsPerS} and ${peak.readBytesPerS}`);
  let promptFlops = 0;
  for (let p = 0; p < w.promptLen; p++) promptFlops += tokenFlops(m, p + 1);
  let seconds = (w.prompts * promptFlops) / peak.flopsPerS;
  const weightRead = (m.matmulParameters * m.bytesPerWeight) / peak.readBytesPerS;
  for (let s = 1; s < w.newTokens; s++) seconds += Math.max((w.rows * tokenFlops(m, w.promptLen + s)) / peak.flopsPerS, weightRead);
  return seconds;
}

/** The share of the roofline a measured run reached: roofline seconds over measured seconds (1 = at the roofline). */
export function rooflineFraction(m: RooflineModel, w: RooflineWorkload, peak: MachinePeak, measuredSeconds: number): number {
  if (!(measuredSeconds > 0)) throw new RangeError(`roofline: measured seconds must be > 0, got ${measuredSeconds}`);
  return rooflineSeconds(m, w, peak) / measuredSeconds;
}

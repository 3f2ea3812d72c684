/**
 * Additive attention biases, built on the host before the tape starts: comparison ops inside a
 * taped function break tfjs's `variableGrads` on the wasm backend, and a host-built constant has
 * no gradient to take anyway.
 */

/** Added to the scores of keys a query may not see; large enough that exp() underflows to 0. */
export const MASKED = -1e9;

/**
 * Bias of shape [B or 1, 1, repeat·T, S] for T queries that follow `past` cached positions
 * (S = past + T): a query sees keys at or before its own position whose `keyMask` entry is 1,
 * and with a `window` only the last `window` of them, itself included (transformers'
 * sliding_window_overlay: key index > query index − window, counted in cache positions, padding
 * included). The query block is repeated `repeat` times so grouped-query attention can score every
 * query head of a key/value group in one matrix product.
 */
export function attentionBias(opts: {
  batch: number;
  queries: number;
  past: number;
  repeat: number;
  /** [B, past + T], 1 for a real token, 0 for padding; omitted means no padding. */
  keyMask?: ArrayLike<number>;
  /** Sliding-window length; omitted means every earlier position. */
  window?: number;
}): { data: Float32Array; shape: [number, number, number, number] } {
  const { queries: t, past, repeat } = opts;
  const s = past + t;
  const rows = opts.keyMask === undefined ? 1 : opts.batch;
  if (opts.keyMask !== undefined && opts.keyMask.length !== opts.batch * s) {
    throw new RangeError(`attention mask has ${opts.keyMask.length} entries, expected batch ${opts.batch} × ${s} positions`);
  }
  const data = new Float32Array(rows * repeat * t * s);
  for (let b = 0; b < rows; b++) {
    for (let q = 0; q < t; q++) {
      const base = (b * repeat * t + q) * s;
      for (let k = 0; k < s; k++) {
        const visible =
          k <= past + q && (opts.window === undefined || k > past + q - opts.window) && (opts.keyMask === undefined || opts.keyMask[b * s + k] === 1);
        if (!visible) data[base + k] = MASKED;
      }
    }
    // the same [T, S] block for every query head of a group
    const block = data.subarray(b * repeat * t * s, (b * repeat + 1) * t * s);
    for (let r = 1; r < repeat; r++) data.set(block, (b * repeat + r) * t * s);
  }
  return { data, shape: [rows, 1, repeat * t, s] };
}

/**
 * Position ids from a padding mask, as transformers derives them during generation: the count
 * of real tokens before each position (padding positions get 0, as in transformers 5; no real
 * token ever attends to them).
 */
export function positionsFromMask(mask: ArrayLike<number>, batch: number, length: number): Int32Array {
  const out = new Int32Array(batch * length);
  for (let b = 0; b < batch; b++) {
    let seen = 0;
    for (let i = 0; i < length; i++) {
      const real = mask[b * length + i] === 1;
      out[b * length + i] = real ? seen : 0;
      if (real) seen++;
    }
  }
  return out;
}

/**
 * The key mask [B, S] of one query per row at the last position S − 1 with a sliding `window`:
 * `keyMask` with the keys before the window cleared. For a single query this is the whole
 * sliding-window rule, so the fused kernels and decoders, which take a key mask and add the
 * causal rule themselves, can run sliding-window layers one token at a time.
 */
export function windowedKeyMask<T extends Uint8Array | Int32Array>(keyMask: T, batch: number, window: number | undefined): T {
  const s = keyMask.length / batch;
  if (window === undefined || s <= window) return keyMask;
  const out = keyMask.slice() as T;
  for (let b = 0; b < batch; b++) out.fill(0, b * s, b * s + s - window);
  return out;
}

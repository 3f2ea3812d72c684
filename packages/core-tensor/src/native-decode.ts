/**
 * The native backend's decoding kernel: one step of a Llama-layout decoder (the model code that
 * knows which weight is which is @pbrl/models' fused-decode.ts) in one addon call, bypassing
 * tfjs: generation at small batch is otherwise bound by tfjs's per-kernel overhead (~200 kernel
 * calls per token), not by arithmetic. The weights are read in place on the wasm heap; the KV
 * cache is JS memory owned by the {@link NativeDecodeCache}.
 */
import { nativeHeapAccess } from "./native-backend.js";
import type { tf } from "./tf.js";

/** Sizes of the model the decoder runs. */
export interface DecodeDims {
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  intermediate: number;
  vocab: number;
  layers: number;
  rmsNormEps: number;
}

/**
 * Keys and values of `batch` rows for up to `capacity` positions, [layers, batch, kvHeads,
 * capacity, headDim] each, filled from a tfjs cache after the prompt and by every step after.
 */
export class NativeDecodeCache {
  readonly k: Float32Array;
  readonly v: Float32Array;
  /** Positions filled so far. */
  length = 0;

  constructor(
    readonly dims: DecodeDims,
    public batch: number,
    readonly capacity: number,
  ) {
    const n = dims.layers * batch * dims.kvHeads * capacity * dims.headDim;
    this.k = new Float32Array(n);
    this.v = new Float32Array(n);
  }

  /** Copies a layer's cached keys and values, [batch, kvHeads, length, headDim] each, into positions [0, length). */
  load(layer: number, k: Float32Array, v: Float32Array, length: number): void {
    const { kvHeads, headDim: d } = this.dims;
    if (length > this.capacity) throw new RangeError(`NativeDecodeCache: ${length} positions exceed its capacity ${this.capacity}`);
    if (k.length !== this.batch * kvHeads * length * d || v.length !== k.length)
      throw new RangeError("NativeDecodeCache: cached keys or values of the wrong size");
    for (let row = 0; row < this.batch * kvHeads; row++) {
      const dst = (layer * this.batch * kvHeads + row) * this.capacity * d;
      this.k.set(k.subarray(row * length * d, (row + 1) * length * d), dst);
      this.v.set(v.subarray(row * length * d, (row + 1) * length * d), dst);
    }
    this.length = length;
  }
}

/**
 * Keeps only these rows (increasing indices), in this order, moved to the front of the buffers: rows
 * that have finished then cost nothing in later steps. Moving forward in order never overwrites a
 * row not yet moved, as no row moves to a later offset.
 */
export function keepDecodeRows(cache: NativeDecodeCache, rows: Int32Array): void {
  const { layers, kvHeads, headDim: d } = cache.dims;
  if (rows.length === 0 || rows.some((r, i) => r < 0 || r >= cache.batch || (i > 0 && r <= rows[i - 1]!)))
    throw new RangeError(`keepDecodeRows: rows must be increasing indices below the batch ${cache.batch}`);
  const rowSize = kvHeads * cache.capacity * d;
  for (let l = 0; l < layers; l++)
    rows.forEach((r, j) => {
      const from = (l * cache.batch + r) * rowSize;
      const to = (l * rows.length + j) * rowSize;
      cache.k.copyWithin(to, from, from + rowSize);
      cache.v.copyWithin(to, from, from + rowSize);
    });
  cache.batch = rows.length;
}

/**
 * The heap offsets of native-backend tensors in the order given (−1 for an absent one), e.g. the
 * decoder's weights: computed once per generation, as the offsets stay put while the tensors live.
 */
export function nativeHeapOffsets(tensors: readonly (tf.Tensor | undefined)[]): Float64Array {
  const { offset } = nativeHeapAccess();
  return Float64Array.from(tensors, (t) => (t === undefined ? -1 : offset(t)));
}

/**
 * One step: appends each row's token at position `cache.length` and writes the next-token logits
 * [batch, vocab] into `logits`. `weights` are {@link nativeHeapOffsets} of tensors still alive, in
 * the addon's order: embed, finalNorm, lmHead, then per layer inputNorm, q, k, v, o, their four
 * biases, postNorm, gate, up, down, their three biases (native/src/decode.cc);
 * cos and sin are the rotary tables of the rows' positions [batch, headDim]; keyMask
 * [batch, cache.length + 1] marks the positions each row attends to.
 */
export function nativeDecodeStep(
  weights: Float64Array,
  cache: NativeDecodeCache,
  step: { ids: Int32Array; cos: Float32Array; sin: Float32Array; keyMask: Uint8Array },
  logits: Float32Array,
): void {
  if (cache.length >= cache.capacity) throw new RangeError(`nativeDecodeStep: the cache is full (${cache.capacity} positions)`);
  const { addon, heap } = nativeHeapAccess();
  const d = cache.dims;
  const dims = [cache.batch, d.hidden, d.heads, d.kvHeads, d.headDim, d.intermediate, d.vocab, d.layers, cache.capacity, cache.length, d.rmsNormEps];
  // After keepDecodeRows the buffers hold fewer rows than they were made for: the addon sees those rows only.
  const used = d.layers * cache.batch * d.kvHeads * cache.capacity * d.headDim;
  addon.decode(
    heap(),
    weights,
    Float64Array.from(dims),
    step.ids,
    step.cos,
    step.sin,
    step.keyMask,
    cache.k.subarray(0, used),
    cache.v.subarray(0, used),
    logits,
  );
  cache.length += 1;
}

/**
 * Draws one token per row from softmax(logits / temperature), [rows, vocab] logits, with each
 * row's uniform draw in [0, 1) (a negative draw skips the row; its entry of `out` is left as is):
 * the addon's float64 version of plain sampling (no top-k, no top-p), threaded over rows.
 */
export function nativeSampleRows(logits: Float32Array, uniforms: Float64Array, temperature: number, out: Int32Array): void {
  nativeHeapAccess().addon.sample(logits, uniforms, temperature, out);
}

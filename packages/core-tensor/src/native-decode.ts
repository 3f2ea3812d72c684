/**
 * Token-by-token decoding of a Llama-family model in one addon call per step, bypassing tfjs on
 * the native backend: generation at small batch is otherwise bound by tfjs's per-kernel overhead
 * (~200 kernel calls per token), not by arithmetic. The weights are read in place on the wasm
 * heap; the KV cache is JS memory owned by the {@link NativeDecodeCache}.
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

/** The weights, HF layout ([out, in] projections); biases undefined when the model has none. */
export interface DecodeWeights {
  embed: tf.Tensor;
  finalNorm: tf.Tensor;
  lmHead: tf.Tensor;
  layers: {
    inputNorm: tf.Tensor;
    q: tf.Tensor;
    k: tf.Tensor;
    v: tf.Tensor;
    o: tf.Tensor;
    qBias?: tf.Tensor | undefined;
    kBias?: tf.Tensor | undefined;
    vBias?: tf.Tensor | undefined;
    oBias?: tf.Tensor | undefined;
    postNorm: tf.Tensor;
    gate: tf.Tensor;
    up: tf.Tensor;
    down: tf.Tensor;
    gateBias?: tf.Tensor | undefined;
    upBias?: tf.Tensor | undefined;
    downBias?: tf.Tensor | undefined;
  }[];
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
    readonly batch: number,
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
    if (k.length !== this.batch * kvHeads * length * d || v.length !== k.length) throw new RangeError("NativeDecodeCache: cached keys or values of the wrong size");
    for (let row = 0; row < this.batch * kvHeads; row++) {
      const dst = ((layer * this.batch * kvHeads + row) * this.capacity) * d;
      this.k.set(k.subarray(row * length * d, (row + 1) * length * d), dst);
      this.v.set(v.subarray(row * length * d, (row + 1) * length * d), dst);
    }
    this.length = length;
  }
}

/**
 * The heap offsets of the weights, in the order the addon reads them (−1 for an absent bias).
 * Computed once per generation: the offsets stay put while the tensors live.
 */
export function decodeWeightOffsets(weights: DecodeWeights): Float64Array {
  const { offset } = nativeHeapAccess();
  const at = (t: tf.Tensor | undefined): number => (t === undefined ? -1 : offset(t));
  const offsets = [at(weights.embed), at(weights.finalNorm), at(weights.lmHead)];
  for (const l of weights.layers) {
    offsets.push(at(l.inputNorm), at(l.q), at(l.k), at(l.v), at(l.o), at(l.qBias), at(l.kBias), at(l.vBias), at(l.oBias), at(l.postNorm), at(l.gate), at(l.up), at(l.down), at(l.gateBias), at(l.upBias), at(l.downBias));
  }
  return Float64Array.from(offsets);
}

/**
 * One step: appends each row's token at position `cache.length` and writes the next-token logits
 * [batch, vocab] into `logits`. `weights` are {@link decodeWeightOffsets} of tensors still alive;
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
  addon.decode(heap(), weights, Float64Array.from(dims), step.ids, step.cos, step.sin, step.keyMask, cache.k, cache.v, logits);
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

/**
 * Token-by-token decoding on the libtorch backend in one addon call per step (libtorch/src/
 * decode.cc): the libtorch counterpart of the native backend's decoder, for the same reason —
 * at small batch a step is otherwise ~20 tfjs kernel calls per layer. The weights stay where they
 * are (or are copied once to bfloat16, halving what every token reads), each prompt's keys and
 * values are held once for all the rows that answer it (attention reads them once per step, not
 * once per row), each row's own cache is preallocated for the rest of the generation on the same
 * device, and each step's logits stay there too, for {@link libtorchSampleRows}.
 */
import type { DecodeDims } from "../native-decode.js";
import { tf } from "../tf.js";
import type { LibtorchBackend } from "./backend.js";
import { LIBTORCH_BACKEND_NAME } from "./register.js";

export class LibtorchDecoder {
  private readonly backend: LibtorchBackend;
  private handle: number | undefined;
  /** Positions filled so far. */
  length = 0;

  /** Rows decoded. */
  batch: number;

  /**
   * A decoder for one row per entry of `rowPrompt` (the prompt each row answers: 0, 0, …, 1, …, in
   * row order) and up to `capacity` positions. `weights` in the order of nativeDecodeStep's
   * (undefined for an absent bias). With `bf16Weights` the projections are read as bfloat16
   * copies (made once here); the norms, biases and cache stay float32.
   */
  constructor(
    weights: readonly (tf.Tensor | undefined)[],
    dims: DecodeDims,
    rowPrompt: Int32Array,
    readonly capacity: number,
    bf16Weights = false,
  ) {
    if (tf.getBackend() !== LIBTORCH_BACKEND_NAME) throw new Error(`LibtorchDecoder runs on the libtorch backend only (active: ${tf.getBackend()})`);
    this.backend = tf.backend() as unknown as LibtorchBackend;
    const ids = weights.map((t) => (t === undefined ? -1 : this.backend.id(t)));
    const d = dims;
    this.batch = rowPrompt.length;
    this.handle = this.backend.addon.decoderCreate(
      ids,
      [this.batch, d.hidden, d.heads, d.kvHeads, d.headDim, d.vocab, d.layers, capacity],
      d.rmsNormEps,
      bf16Weights,
      rowPrompt,
    );
  }

  private live(): number {
    if (this.handle === undefined) throw new Error("LibtorchDecoder: used after dispose()");
    return this.handle;
  }

  /** Copies a layer's prompt keys and values, [prompts, kvHeads, length, headDim] tensors (one row per prompt), as positions [0, length). */
  load(layer: number, k: tf.Tensor, v: tf.Tensor, length: number): void {
    this.backend.addon.decoderLoad(this.live(), layer, this.backend.id(k), this.backend.id(v), length);
    this.length = length;
  }

  /**
   * Appends each row's token at position {@link length} and returns the next-token logits
   * [batch, vocab] (a tensor the caller disposes). cos and sin are the rotary tables of the rows'
   * positions [batch, headDim]; keyMask [batch, length + 1] marks the positions each row attends to.
   */
  step(ids: Int32Array, cos: Float32Array, sin: Float32Array, keyMask: Uint8Array): tf.Tensor2D {
    const ref = this.backend.addon.decoderStep(this.live(), ids, cos, sin, keyMask);
    this.length += 1;
    return tf.engine().makeTensorFromTensorInfo(this.backend.out(ref)) as tf.Tensor2D;
  }

  /** Keeps only these rows (increasing indices), in this order: finished rows leave the batch. */
  keep(rows: Int32Array): void {
    this.backend.addon.decoderKeep(this.live(), rows);
    this.batch = rows.length;
  }

  dispose(): void {
    if (this.handle !== undefined) this.backend.addon.decoderFree(this.handle);
    this.handle = undefined;
  }
}

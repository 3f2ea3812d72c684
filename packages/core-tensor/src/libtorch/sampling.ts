import { tf } from "../tf.js";
import type { LibtorchBackend } from "./backend.js";
import { LIBTORCH_BACKEND_NAME } from "./register.js";

/** How to choose each row's token (the fields of @pbrl/models' SamplingOptions). */
export interface RowSampling {
  greedy: boolean;
  temperature: number;
  topK: number;
  topP: number;
}

/**
 * One token per row of [rows, vocab] logits on the libtorch backend, chosen where the logits lie
 * (CPU or CUDA) by the rule of @pbrl/models' chooseToken — temperature, top-k, top-p, then the
 * row's uniform draw — so that only the ids come back. `uniforms[i] < 0` skips row i (its token
 * is 0). Greedy rows take the first maximum and use no draw.
 */
export function libtorchSampleRows(logits: tf.Tensor2D, uniforms: Float64Array, o: RowSampling): Int32Array {
  if (tf.getBackend() !== LIBTORCH_BACKEND_NAME) throw new Error(`libtorchSampleRows runs on the libtorch backend only (active: ${tf.getBackend()})`);
  if (uniforms.length !== logits.shape[0]) throw new RangeError(`libtorchSampleRows: ${uniforms.length} draws for ${logits.shape[0]} rows`);
  const backend = tf.backend() as unknown as LibtorchBackend;
  return backend.addon.sampleRows(backend.id(logits), uniforms, o.greedy, o.temperature, o.topK, o.topP);
}

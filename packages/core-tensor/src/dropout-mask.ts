import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";
import type { RngStream } from "./rng.js";
import { tf } from "./tf.js";

/**
 * Inverted-dropout multipliers of `shape`: each entry 0 with probability p, else 1 / (1 − p), as
 * RngStream.fillDropoutMask draws them (`rng` advances by two draws). On libtorch the addon draws
 * them where the tensor is made (the same values); elsewhere fillDropoutMask fills a host array
 * that is then uploaded.
 */
export function dropoutMask(rng: RngStream, shape: readonly [number, number], p: number): tf.Tensor2D {
  const keep = 1 / (1 - p);
  if (tf.getBackend() === LIBTORCH_BACKEND_NAME) {
    const backend = tf.backend() as unknown as LibtorchBackend;
    const words = Uint32Array.from(rng.getState());
    const ref = backend.addon.dropoutMask(words, shape[0], shape[1], p, keep);
    rng.setState([words[0]!, words[1]!, words[2]!, words[3]!]);
    return tf.engine().makeTensorFromTensorInfo(backend.out(ref)) as tf.Tensor2D;
  }
  const mask = new Float32Array(shape[0] * shape[1]);
  rng.fillDropoutMask(mask, p, keep);
  return tf.tensor2d(mask, [...shape]);
}

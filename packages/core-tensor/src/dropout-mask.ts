import type { RngStream } from "./rng.js";
import { tf } from "./tf.js";

/**
 * Inverted-dropout multipliers of `shape`: each entry 0 with probability p, else 1 / (1 − p), as
 * RngStream.fillDropoutMask draws them (`rng` advances by two draws). For the tfjs-op LoRA path;
 * libtorch's fused kernel (loraLinear) draws the same mask where it applies it.
 */
export function dropoutMask(rng: RngStream, shape: readonly [number, number], p: number): tf.Tensor2D {
  const mask = new Float32Array(shape[0] * shape[1]);
  rng.fillDropoutMask(mask, p, 1 / (1 - p));
  return tf.tensor2d(mask, [...shape]);
}

/**
 * Mixed precision: with `bf16`, the libtorch backend computes matrix products and attention in
 * bfloat16 (AMX / AVX512-BF16 through oneDNN on CPU, tensor cores on CUDA) from float32 tensors,
 * and returns float32; weights, gradients and optimizer state stay float32 (TRL's `bf16=True`
 * with float32 master weights). Other backends compute in float32 only.
 */
import { tf } from "./tf.js";
import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";

export type ComputePrecision = "float32" | "bf16";

export class PrecisionUnavailableError extends Error {
  override name = "PrecisionUnavailableError";
}

/** Sets the precision of the active backend's matrix products (per JavaScript thread). */
export function setComputePrecision(precision: ComputePrecision): void {
  const backend = tf.getBackend();
  if (backend !== LIBTORCH_BACKEND_NAME) {
    if (precision === "float32") return;
    throw new PrecisionUnavailableError(`bf16 needs backend=libtorch (the ${backend} backend computes in float32 only); set backend=libtorch, or bf16=false`);
  }
  (tf.backend() as unknown as LibtorchBackend).addon.setBf16(precision === "bf16");
}

/** The precision the active backend computes matrix products in. */
export function computePrecision(): ComputePrecision {
  if (tf.getBackend() !== LIBTORCH_BACKEND_NAME) return "float32";
  return (tf.backend() as unknown as LibtorchBackend).addon.bf16() ? "bf16" : "float32";
}

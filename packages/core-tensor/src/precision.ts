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

/**
 * Makes the bfloat16 copies of `weights` that bf16 products read, now rather than at their first
 * product (libtorch in bf16; elsewhere nothing). Made during the first forward pass, each copy
 * lands between that pass's activations and, kept for the weight's life, leaves the heap
 * fragmented: the next step's activations no longer fit the same holes and touch new pages
 * (a SmolLM2-135M bf16 step after the warm-up one: 29,000–44,000 minor page faults; with the
 * copies made first, about 550). AdamW makes them with its moments.
 */
export function makeBf16Copies(weights: readonly tf.Tensor[]): void {
  if (computePrecision() !== "bf16") return;
  const backend = tf.backend() as unknown as LibtorchBackend;
  backend.addon.makeBf16Copies(weights.map((w) => backend.id(w)));
}

/**
 * Stores `weights`, which must never change again, as bfloat16 only (libtorch in bf16; elsewhere
 * nothing): the float32 values are dropped, and products read the bfloat16 ones they read anyway.
 * A LoRA run's frozen base is held this way, at 2 bytes a parameter instead of 4 + 2 (as PyTorch
 * holds a base loaded in bfloat16). Vectors (norms, biases) stay float32. Returns the bytes freed.
 */
export function storeInBf16(weights: readonly tf.Tensor[]): number {
  if (computePrecision() !== "bf16") return 0;
  const backend = tf.backend() as unknown as LibtorchBackend;
  return backend.addon.storeBf16(weights.map((w) => backend.id(w)));
}

/**
 * What the active backend offers beyond tfjs's own kernels, for code that picks between a fused
 * kernel and a sequence of tfjs ops. Both answers are the same for `native` (pbrl's C++ kernels on
 * the wasm heap) and `libtorch` (ATen); every other backend runs the tfjs ops.
 */
import { tf } from "./tf.js";

const FUSED = new Set(["native", "libtorch"]);

/** Whether pbrl's fused kernels (fused-ops.ts) are registered for the active backend. */
export function fusedKernelsActive(): boolean {
  return FUSED.has(tf.getBackend());
}

/**
 * Whether the active backend's matrix product reads transposed operands at no cost (BLAS flags or
 * strided views), so that transposes are passed to it instead of materialised.
 */
export function transposesAreFree(): boolean {
  return FUSED.has(tf.getBackend());
}

import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";
import { tf } from "./tf.js";

/**
 * Gives back to the system what the backend keeps for reuse, between phases of a run whose
 * tensors differ in size (generating, then training): libtorch's cache of large blocks and glibc's
 * untrimmed heap (libtorch/src/allocator.cc), which would otherwise stay resident under the next
 * phase's peak. Nothing on other backends (a wasm heap never shrinks). Returns the MB released
 * from the block cache.
 */
export function releaseCachedMemory(): number {
  if (tf.getBackend() !== LIBTORCH_BACKEND_NAME) return 0;
  return (tf.backend() as unknown as LibtorchBackend).addon.releaseCpuCache();
}

import { freemem, totalmem } from "node:os";
import { registerMemoryLimit } from "../memory-capacity.js";
import { tf } from "../tf.js";
import type { LibtorchAddon } from "./addon.js";
import { LibtorchBackend } from "./backend.js";
import { registerLibtorchKernels } from "./kernels.js";

export const LIBTORCH_BACKEND_NAME = "libtorch";
/** Below wasm (2) and native (1), so tfjs never picks `libtorch` on its own. */
const LIBTORCH_PRIORITY = 0;

/** Registers the `libtorch` backend and its kernels (once); the caller then `setBackend`s it. */
export function registerLibtorchBackend(addon: LibtorchAddon): void {
  if (tf.findBackendFactory(LIBTORCH_BACKEND_NAME) !== null) return;
  registerLibtorchKernels(LIBTORCH_BACKEND_NAME);
  // Tensors in host memory: what the machine has free now, beside what pbrl's tensors already hold.
  registerMemoryLimit(LIBTORCH_BACKEND_NAME, () => ({
    limitBytes: freemem() + tf.memory().numBytes,
    why: `its tensors live in host memory (${(freemem() / 2 ** 30).toFixed(1)} GB free of ${(totalmem() / 2 ** 30).toFixed(1)} GB now)`,
  }));
  tf.registerBackend(LIBTORCH_BACKEND_NAME, () => new LibtorchBackend(addon), LIBTORCH_PRIORITY);
}

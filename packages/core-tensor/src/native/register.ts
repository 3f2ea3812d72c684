import type { KernelConfig } from "@tensorflow/tfjs-core";
import { tf } from "../tf.js";
import { adoptNativeAddon, NATIVE_BACKEND_NAME, type KernelArgs } from "./heap.js";
import { FUSED_KERNELS } from "./kernels-fused.js";
import { NATIVE_KERNELS } from "./kernels-tfjs.js";
import type { NativeAddon } from "./loader.js";

/** Below wasm (2), so tfjs never picks `native` on its own. */
const NATIVE_PRIORITY = 1;

/**
 * Registers the `native` backend (once): a second wasm backend instance from the wasm backend's
 * own factory, every wasm kernel, and the native replacements. The caller then `setBackend`s it.
 */
export function registerNativeBackend(loadedAddon: NativeAddon): void {
  adoptNativeAddon(loadedAddon);
  if (tf.findBackendFactory(NATIVE_BACKEND_NAME) !== null) return;
  const factory = tf.findBackendFactory("wasm");
  if (factory === null) throw new Error("native backend: the wasm backend is not registered with tfjs");
  const kernels: KernelConfig[] = tf.getKernelsForBackend("wasm");
  for (const config of kernels) {
    const replacement = NATIVE_KERNELS[config.kernelName];
    const wasmKernel = config.kernelFunc;
    tf.registerKernel({
      ...config,
      backendName: NATIVE_BACKEND_NAME,
      kernelFunc: replacement === undefined ? wasmKernel : (args) => replacement(args as unknown as KernelArgs, wasmKernel),
    });
  }
  for (const [kernelName, kernel] of Object.entries(FUSED_KERNELS)) {
    tf.registerKernel({ kernelName, backendName: NATIVE_BACKEND_NAME, kernelFunc: (args) => kernel(args as unknown as KernelArgs) });
  }
  tf.registerBackend(NATIVE_BACKEND_NAME, factory, NATIVE_PRIORITY);
}

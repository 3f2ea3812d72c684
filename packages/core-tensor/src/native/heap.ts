/**
 * What the native kernels share: the addon they call and the wasm heap they work on.
 */
import type { DataType, NamedAttrMap, NamedTensorInfoMap, TensorInfo } from "@tensorflow/tfjs-core";
import { tf } from "../tf.js";
import type { NativeAddon } from "./loader.js";

// The wasm backend's internals that the native kernels use (see tfjs-backend-wasm's BackendWasm).
export interface WasmHeapBackend {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number; shape: number[]; dtype: DataType } | undefined };
  makeOutput(shape: number[], dtype: DataType): TensorInfo;
  incRef(dataId: object): void;
}

export interface KernelArgs {
  inputs: NamedTensorInfoMap;
  backend: WasmHeapBackend;
  attrs: NamedAttrMap;
}

export function offsetOf(backend: WasmHeapBackend, t: TensorInfo): number {
  const data = backend.dataIdMap.get(t.dataId);
  if (data === undefined) throw new Error("native backend: an input tensor has no data on the native backend");
  return data.memoryOffset;
}

/** The heap's current buffer: read after every allocation, since growing the heap replaces it. */
export function heapOf(backend: WasmHeapBackend): ArrayBuffer {
  return backend.wasm.HEAPU8.buffer as ArrayBuffer;
}

export function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export const NATIVE_BACKEND_NAME = "native";

let addon: NativeAddon | undefined;

/** Makes `loadedAddon` the one the kernels call, unless one is already (the first registration wins). */
export function adoptNativeAddon(loadedAddon: NativeAddon): void {
  addon ??= loadedAddon;
}

/** The loaded addon and the active native backend's heap view, for code that calls the addon directly. */
export function nativeHeapAccess(): { addon: NativeAddon; heap: () => ArrayBuffer; offset: (t: tf.Tensor) => number } {
  if (tf.getBackend() !== NATIVE_BACKEND_NAME) throw new Error("native backend: not the active backend");
  const backend = tf.backend() as unknown as WasmHeapBackend;
  return { addon: native(), heap: () => heapOf(backend), offset: (t) => offsetOf(backend, t) };
}

/** The addon the native kernels call. */
export function native(): NativeAddon {
  if (addon === undefined) throw new Error("native backend: the addon is not loaded");
  return addon;
}

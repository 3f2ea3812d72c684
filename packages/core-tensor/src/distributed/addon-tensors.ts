/**
 * tf.Tensors in and out of the libtorch addon's tensor table for collectives. On the libtorch
 * backend a tensor already is an addon tensor, passed by id without a copy, and results come back
 * as tensors of that backend. On any other backend (native, wasm, cpu) the values are copied into
 * the addon and the results copied back, so every backend's runs can use process groups.
 */
import { tf } from "../tf.js";
import type { LibtorchAddon, TensorRef } from "../libtorch/addon.js";
import { dtypeCode, LibtorchBackend } from "../libtorch/backend.js";

/** Addon ids for tensors, with a release() for the copies made here (a second call does nothing). */
export interface AddonInputs {
  ids: number[];
  release(): void;
}

function libtorchBackendOf(addon: LibtorchAddon): LibtorchBackend | undefined {
  const b = tf.backend();
  return b instanceof LibtorchBackend && b.addon === addon ? b : undefined;
}

export function toAddon(addon: LibtorchAddon, tensors: readonly tf.Tensor[]): AddonInputs {
  const backend = libtorchBackendOf(addon);
  const copies: number[] = [];
  const ids = tensors.map((t) => {
    if (t.isDisposed) throw new Error("process group: a tensor given to a collective is disposed");
    if (backend?.holds(t)) return backend.id(t);
    if (t.dtype === "string" || t.dtype === "complex64")
      throw new Error(`process group: ${t.dtype} tensors cannot take part in collectives (float32, int32, bool)`);
    const id = addon.write(t.dataSync() as Float32Array | Int32Array | Uint8Array, t.shape, dtypeCode(t.dtype))[0]!;
    copies.push(id);
    return id;
  });
  return {
    ids,
    // Once only: the copies' ids may be reused by the addon's table right after.
    release: () => {
      for (const id of copies.splice(0)) addon.free(id);
    },
  };
}

const DTYPES: readonly tf.DataType[] = ["float32", "int32", "bool"];

/** Tensors of the active backend from the addon's results (freed from the addon when copied out). */
export function fromAddon(addon: LibtorchAddon, refs: readonly TensorRef[]): tf.Tensor[] {
  const backend = libtorchBackendOf(addon);
  return refs.map((ref) => {
    if (backend !== undefined) return tf.engine().makeTensorFromTensorInfo(backend.out(ref));
    const [id, code, ...shape] = ref as [number, number, ...number[]];
    try {
      return tf.tensor(addon.read(id), shape, DTYPES[code]);
    } finally {
      addon.free(id);
    }
  });
}

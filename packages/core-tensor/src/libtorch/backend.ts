/**
 * The `libtorch` TensorFlow.js backend: tensors are ATen tensors held by pbrl's libtorch addon,
 * and every kernel pbrl runs is an ATen op (kernels.ts). tfjs keeps doing what it does above
 * the kernels — ops, autograd tapes, tidy scopes — so the rest of pbrl is unchanged.
 *
 * A tfjs data id maps to one addon tensor id; tfjs's reference counts decide when it is freed.
 * Tensors are never mutated, so kernels may return views (a transpose, a reshape, a slice) and
 * Identity shares its input. String tensors stay in JavaScript (no kernel uses them).
 */
import type { BackendTimingInfo, DataId, DataType, TensorInfo } from "@tensorflow/tfjs-core";
import { tf } from "../tf.js";
import type { LibtorchAddon, TensorRef } from "./addon.js";

interface Stored {
  /** The addon's tensor id; −1 for a string tensor. */
  id: number;
  dtype: DataType;
  refCount: number;
  /** A string tensor's values (encoded). */
  strings?: Uint8Array[];
  /** Whether a tf.Variable has held this data (see incRef). */
  weight?: boolean;
}

const DTYPE_CODES: Partial<Record<DataType, number>> = { float32: 0, int32: 1, bool: 2 };
const CODE_DTYPES: readonly DataType[] = ["float32", "int32", "bool"];

export function dtypeCode(dtype: DataType): number {
  const code = DTYPE_CODES[dtype];
  if (code === undefined) throw new Error(`libtorch backend: dtype ${dtype} is not supported (float32, int32, bool)`);
  return code;
}

export class LibtorchBackend extends tf.KernelBackend {
  private readonly data: tf.DataStorage<Stored>;

  constructor(readonly addon: LibtorchAddon) {
    super();
    this.data = new tf.DataStorage(this, tf.engine());
  }

  override write(values: tf.backend_util.BackendValues, shape: number[], dtype: DataType): DataId {
    const dataId = {};
    this.data.set(dataId, this.store(values, shape, dtype, 1));
    return dataId;
  }

  override move(dataId: DataId, values: tf.backend_util.BackendValues, shape: number[], dtype: DataType, refCount: number): void {
    this.data.set(dataId, this.store(values, shape, dtype, refCount));
  }

  private store(values: tf.backend_util.BackendValues, shape: number[], dtype: DataType, refCount: number): Stored {
    if (dtype === "string") return { id: -1, dtype, refCount, strings: values as Uint8Array[] };
    const typed = values as Float32Array | Int32Array | Uint8Array;
    return { id: this.addon.write(typed, shape, dtypeCode(dtype))[0]!, dtype, refCount };
  }

  override readSync(dataId: DataId): tf.backend_util.BackendValues {
    const s = this.data.get(dataId);
    return s.strings ?? this.addon.read(s.id);
  }

  override read(dataId: DataId): Promise<tf.backend_util.BackendValues> {
    return Promise.resolve(this.readSync(dataId));
  }

  override refCount(dataId: DataId): number {
    return this.data.has(dataId) ? this.data.get(dataId).refCount : 0;
  }

  /** tfjs calls this only when a variable takes the data (tf.variable, Variable.assign). */
  override incRef(dataId: DataId): void {
    const s = this.data.get(dataId);
    s.refCount++;
    s.weight = true;
  }

  /**
   * Whether the data is (or was) a tf.Variable's: a weight, as bf16 products need to know. Kept
   * by the backend because a variable's data id changes with every assign (each optimizer step),
   * so finding it among the registered variables means a scan of all of them per product (~20 ms
   * a SmolLM2-135M step with AdamW's moments). Data a variable let go of but another tensor still
   * holds keeps the mark; its products then return bfloat16 storage of the same values.
   */
  isWeight(t: TensorInfo): boolean {
    return this.data.get(t.dataId)?.weight === true;
  }

  override disposeData(dataId: DataId, force = false): boolean {
    if (!this.data.has(dataId)) return true;
    const s = this.data.get(dataId);
    s.refCount--;
    if (!force && s.refCount > 0) return false;
    if (s.id >= 0) this.addon.free(s.id);
    this.data.delete(dataId);
    return true;
  }

  override numDataIds(): number {
    return this.data.numDataIds();
  }

  override memory(): { unreliable: boolean; reasons?: string[] } {
    return { unreliable: false };
  }

  override floatPrecision(): 16 | 32 {
    return 32;
  }

  override time(f: () => void): Promise<BackendTimingInfo> {
    const start = performance.now();
    f();
    return Promise.resolve({ kernelMs: performance.now() - start });
  }

  override dispose(): void {
    // tfjs disposes every tensor before it disposes a backend; nothing is left to free.
  }

  /** Whether this backend holds the tensor's data (a tensor made while another backend was active does not). */
  holds(t: TensorInfo): boolean {
    return this.data.has(t.dataId) && this.data.get(t.dataId).id >= 0;
  }

  /** The addon tensor id behind a kernel input. */
  id(t: TensorInfo): number {
    const s = this.data.get(t.dataId);
    if (s.id < 0) throw new Error(`libtorch backend: a ${s.dtype} tensor cannot be an input of this kernel`);
    return s.id;
  }

  /** A kernel output from the addon's reference. */
  out(ref: TensorRef): TensorInfo {
    const dataId = {};
    const dtype = CODE_DTYPES[ref[1]!]!;
    this.data.set(dataId, { id: ref[0]!, dtype, refCount: 1 });
    return { dataId, shape: ref.slice(2), dtype };
  }
}

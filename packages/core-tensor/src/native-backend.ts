/**
 * The `native` tensor backend: the wasm backend with its heavy kernels replaced by C++ ones.
 *
 * `native` is a second instance of tfjs's wasm backend (`BackendWasm`, created by the wasm
 * backend's own registered factory, so it has a heap of its own and `wasm` stays untouched for
 * fallback and comparison). Every kernel registered for `wasm` is registered for `native` too;
 * the kernels listed in {@link NATIVE_KERNELS} are replaced by implementations in pbrl's N-API
 * addon (packages/core-tensor/native): OpenBLAS sgemm for matrix products, simple threaded loops
 * for the rest. They read their inputs and write their outputs directly in the wasm heap (byte
 * offsets into `backend.wasm.HEAPU8.buffer`), so nothing is copied; inputs a native kernel does
 * not handle (other dtypes, rare attribute values) go to the wasm kernel unchanged.
 *
 * The two instances can live side by side because tfjs re-runs every kernel's setup function on
 * each `setBackend`, and the wasm kernels' setup functions rebind their module-level pointers to
 * the active instance's exports; kernels only ever run on the active backend.
 *
 * The addon is loaded on demand by {@link loadNativeAddon}; `PBRL_NATIVE_ADDON` overrides its path
 * and `PBRL_NATIVE=off` pretends it is absent (to exercise the fallback to wasm).
 * docs/native-backend.md describes the whole path.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import type { DataType, KernelConfig, KernelFunc, NamedAttrMap, NamedTensorInfoMap, TensorInfo } from "@tensorflow/tfjs-core";
import { REBUILD_ADDON_HINT } from "./addon-hints.js";
import { blasCoreType, chooseAndApplyBlasCore, withBlasCore, type CpuFeatures } from "./blas-kernels.js";
import { tf } from "./tf.js";

/** What the addon reports about its threads and the OpenBLAS it is linked against. */
export interface NativeAddonInfo {
  /** Threads of the addon's own pool (elementwise kernels, batches of small products). */
  threads: number;
  /** OpenBLAS threads. */
  blasThreads: number;
  /** OpenBLAS kernel family in use, e.g. "Haswell". */
  blasCore: string;
  /** OpenBLAS build configuration, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ...". */
  blasConfig: string;
}

/** The addon's functions (native/src/pbrl_native.cc). Offsets are byte offsets into `heap`. */
export interface NativeAddon {
  init(threads: number): NativeAddonInfo;
  info(): NativeAddonInfo;
  /** The x86 instruction sets this process may use (all false elsewhere). */
  cpuFeatures(): CpuFeatures;
  /** The OpenBLAS kernel families {@link NativeAddon.setBlasCore} can switch to; empty when it cannot switch. */
  blasCores(): string[];
  /** Switches OpenBLAS's kernel family (process-wide; a family already in use is kept) and returns the one in use. */
  setBlasCore(name: string): string;
  matmul(
    heap: ArrayBuffer,
    aOff: number,
    bOff: number,
    outOff: number,
    batch: number,
    m: number,
    n: number,
    k: number,
    transposeA: boolean,
    transposeB: boolean,
    batchA: number,
    batchB: number,
    aIndex: Int32Array | null,
    bIndex: Int32Array | null,
    biasOff: number,
    biasLength: number,
    activation: number,
    alpha: number,
  ): void;
  transpose(heap: ArrayBuffer, xOff: number, yOff: number, shape: Int32Array, perm: Int32Array): void;
  unary(heap: ArrayBuffer, op: number, xOff: number, yOff: number, n: number): void;
  /** `rows` rows of `rowBytes` bytes from srcOff + r·srcStride to dstOff + r·dstStride (strides in bytes). */
  copy2d(heap: ArrayBuffer, srcOff: number, srcStride: number, dstOff: number, dstStride: number, rows: number, rowBytes: number): void;
  /** x as [outer, axisLen, inner] (inner in bytes): out[o, i] = x[o, idx[i]] for i < count (idx int32). */
  gather(heap: ArrayBuffer, xOff: number, idxOff: number, outOff: number, outer: number, axisLen: number, count: number, innerBytes: number): void;
  /** out [rows, cols] = Σ_i onehot(idx[i]) ⊗ dy[i] for dy [count, cols] (float32, idx int32). */
  scatterAddRows(heap: ArrayBuffer, dyOff: number, idxOff: number, outOff: number, count: number, rows: number, cols: number): void;
  /** float32 sums of a rows × cols matrix: over the rows (→ cols values) or within each row (→ rows values). */
  sum(heap: ArrayBuffer, xOff: number, yOff: number, rows: number, cols: number, overRows: boolean): void;
  /** out[i, j] = dy[i] · ([j = targets[i]] − exp(x[i, j] − lse[i])) over a rows × cols x (targets int32). */
  logsoftmaxGrad(heap: ArrayBuffer, xOff: number, lseOff: number, targetsOff: number, dyOff: number, outOff: number, rows: number, cols: number): void;
  /** lse[i] = logsumexp(x[i, :]) and value[i] = x[i, targets[i]] − lse[i] over a rows × cols x (targets int32). */
  logsoftmaxSelect(heap: ArrayBuffer, xOff: number, targetsOff: number, valueOff: number, lseOff: number, rows: number, cols: number): void;
  /** y = w ⊙ x · rstd and rstd = 1/√(mean(x²) + eps) per row of a rows × cols x. */
  rmsnorm(heap: ArrayBuffer, xOff: number, wOff: number, yOff: number, rstdOff: number, rows: number, cols: number, eps: number): void;
  /** The gradients of rmsnorm with respect to x and w, given its saved rstd and the upstream dy. */
  rmsnormGrad(heap: ArrayBuffer, xOff: number, wOff: number, rstdOff: number, dyOff: number, dxOff: number, dwOff: number, rows: number, cols: number): void;
  /** y = g·σ(g) ⊙ u over n elements. */
  swiglu(heap: ArrayBuffer, gOff: number, uOff: number, yOff: number, n: number): void;
  /** The gradients of swiglu with respect to g and u, given the upstream dy. */
  swigluGrad(heap: ArrayBuffer, gOff: number, uOff: number, dyOff: number, dgOff: number, duOff: number, n: number): void;
  /** Rotary embedding of x [batch, heads, len, dim] with cos, sin [batch, 1, len, dim], or (backward) its transpose. */
  rope(heap: ArrayBuffer, xOff: number, cosOff: number, sinOff: number, yOff: number, batch: number, heads: number, len: number, dim: number, backward: boolean): void;
  /**
   * Causal attention of q [b, h, t, d] over k, v [b, kv, s, d] with a key mask [b, s] (int32): out
   * [b, t, h, d] and the probabilities [b, h, t, s].
   */
  attention(heap: ArrayBuffer, qOff: number, kOff: number, vOff: number, maskOff: number, outOff: number, probsOff: number, b: number, h: number, kv: number, t: number, s: number, d: number, scale: number): void;
  /** The gradients of {@link attention} with respect to q, k and v, given its probabilities and the upstream dy [b, t, h, d]. */
  attentionGrad(
    heap: ArrayBuffer,
    qOff: number,
    kOff: number,
    vOff: number,
    maskOff: number,
    probsOff: number,
    dyOff: number,
    b: number,
    h: number,
    kv: number,
    t: number,
    s: number,
    d: number,
    scale: number,
    dqOff: number,
    dkOff: number,
    dvOff: number,
  ): void;
  /** One decoding step of a Llama-family model (see src/native-decode.ts). */
  decode(
    heap: ArrayBuffer,
    weightOffsets: Float64Array,
    dims: Float64Array,
    ids: Int32Array,
    cos: Float32Array,
    sin: Float32Array,
    keyMask: Uint8Array,
    cacheK: Float32Array,
    cacheV: Float32Array,
    logits: Float32Array,
  ): void;
  /** One AdamW step of n parameters into new buffers (see src/fused-ops.ts `adamwStep`). */
  adamw(
    heap: ArrayBuffer,
    pOff: number,
    gOff: number,
    mOff: number,
    vOff: number,
    pOutOff: number,
    mOutOff: number,
    vOutOff: number,
    n: number,
    decay: number,
    b1: number,
    c1: number,
    b2: number,
    c2: number,
    bc2Sqrt: number,
    eps: number,
    stepSize: number,
  ): void;
  /** Samples one token per row from softmax(logits / temperature) with the row's uniform draw (< 0: skip the row). */
  sample(logits: Float32Array, uniforms: Float64Array, temperature: number, out: Int32Array): void;
}

export type NativeLoad =
  | {
      ok: true;
      addon: NativeAddon;
      info: NativeAddonInfo;
      path: string;
      /** An inherited OPENBLAS_CORETYPE that was not applied to the addon's OpenBLAS (see {@link blasCoreType}). */
      ignoredCoreType?: string;
      /** Why OpenBLAS runs the kernels it does (`info.blasCore`), for the backend line (see blas-kernels.ts). */
      blasCoreReason: string;
    }
  | { ok: false; reason: string; disabled: boolean };

/** Where the install step builds the addon (native/build.mjs). The same relative path from src/ and dist/. */
export const DEFAULT_NATIVE_ADDON_PATH = fileURLToPath(new URL("../native/build/Release/pbrl_native.node", import.meta.url));

/** The addon path in effect: `PBRL_NATIVE_ADDON` when set, else the build output. */
export function nativeAddonPath(): string {
  const p = process.env["PBRL_NATIVE_ADDON"];
  return p !== undefined && p !== "" ? p : DEFAULT_NATIVE_ADDON_PATH;
}

/** Threads for OpenBLAS and the addon's pool: `PBRL_NATIVE_THREADS` when set, else every core. */
export function nativeThreads(): number {
  const v = process.env["PBRL_NATIVE_THREADS"];
  const n = v === undefined || v === "" ? NaN : Number(v);
  return Number.isInteger(n) && n >= 1 ? n : availableParallelism();
}

/** Checks OpenBLAS's kernel family against the CPU's instruction sets (see blas-kernels.ts). */
export function applyBlasCoreChoice(addon: NativeAddon, override: string | undefined): { info: NativeAddonInfo; reason: string } {
  const reason = chooseAndApplyBlasCore({ cpuFeatures: () => addon.cpuFeatures(), blasCores: () => addon.blasCores(), setBlasCore: (n) => addon.setBlasCore(n), currentCore: () => addon.info().blasCore }, override);
  return { info: addon.info(), reason };
}

/** Every function of {@link NativeAddon}, checked when the addon loads. */
const REQUIRED_ADDON_FUNCTIONS = ["init", "info", "cpuFeatures", "blasCores", "setBlasCore", "matmul", "transpose", "unary", "copy2d", "gather", "scatterAddRows", "sum", "logsoftmaxGrad", "logsoftmaxSelect", "rmsnorm", "rmsnormGrad", "swiglu", "swigluGrad", "rope", "attention", "attentionGrad", "decode", "sample", "adamw"] as const satisfies readonly (keyof NativeAddon)[];

const loaded = new Map<string, NativeLoad>();

/**
 * Loads the addon, or says why it cannot: disabled by `PBRL_NATIVE=off`, not built (the file is
 * missing), or failing to load (e.g. libopenblas.so.0 gone since the build). Never throws; the
 * outcome is cached per path.
 */
export function loadNativeAddon(): NativeLoad {
  if (process.env["PBRL_NATIVE"] === "off") return { ok: false, reason: "disabled by PBRL_NATIVE=off", disabled: true };
  const path = nativeAddonPath();
  const cached = loaded.get(path);
  if (cached !== undefined) return cached;
  let result: NativeLoad;
  if (!existsSync(path)) {
    result = { ok: false, reason: `native addon not built (${path} does not exist)`, disabled: false };
  } else {
    try {
      const core = blasCoreType(process.env);
      const inherited = process.env["OPENBLAS_CORETYPE"] ?? "";
      const addon = withBlasCore(core, () => createRequire(import.meta.url)(path) as NativeAddon);
      // An addon built from older sources (pnpm install skipped, or sources pulled since) lacks
      // newer functions; refuse it here rather than fail in the middle of a kernel.
      const missing = REQUIRED_ADDON_FUNCTIONS.filter((f) => typeof (addon as unknown as Record<string, unknown>)[f] !== "function");
      if (missing.length > 0) {
        throw new Error(`it is out of date (no ${missing.join(", ")}); ${REBUILD_ADDON_HINT}`);
      }
      addon.init(nativeThreads());
      const { info, reason } = applyBlasCoreChoice(addon, core);
      result = { ok: true, addon, info, path, blasCoreReason: reason, ...(inherited !== "" && core === undefined ? { ignoredCoreType: inherited } : {}) };
    } catch (e) {
      const msg = (e instanceof Error ? e.message : String(e)).split("\n")[0];
      result = { ok: false, reason: `native addon ${path} failed to load: ${msg}`, disabled: false };
    }
  }
  loaded.set(path, result);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The wasm backend's internals that the native kernels use (see tfjs-backend-wasm's BackendWasm).

interface WasmHeapBackend {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(dataId: object): { memoryOffset: number; shape: number[]; dtype: DataType } | undefined };
  makeOutput(shape: number[], dtype: DataType): TensorInfo;
  incRef(dataId: object): void;
}

interface KernelArgs {
  inputs: NamedTensorInfoMap;
  backend: WasmHeapBackend;
  attrs: NamedAttrMap;
}

function offsetOf(backend: WasmHeapBackend, t: TensorInfo): number {
  const data = backend.dataIdMap.get(t.dataId);
  if (data === undefined) throw new Error("native backend: an input tensor has no data on the native backend");
  return data.memoryOffset;
}

/** The heap's current buffer: read after every allocation, since growing the heap replaces it. */
function heapOf(backend: WasmHeapBackend): ArrayBuffer {
  return backend.wasm.HEAPU8.buffer as ArrayBuffer;
}

function sizeOf(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

let addon: NativeAddon | undefined;

/** The loaded addon and the active native backend's heap view, for code that calls the addon directly. */
export function nativeHeapAccess(): { addon: NativeAddon; heap: () => ArrayBuffer; offset: (t: tf.Tensor) => number } {
  if (tf.getBackend() !== NATIVE_BACKEND_NAME) throw new Error("native backend: not the active backend");
  const backend = tf.backend() as unknown as WasmHeapBackend;
  return { addon: native(), heap: () => heapOf(backend), offset: (t) => offsetOf(backend, t) };
}

function native(): NativeAddon {
  if (addon === undefined) throw new Error("native backend: the addon is not loaded");
  return addon;
}

// ---------------------------------------------------------------------------------------------
// Kernels. Each gets the wasm kernel it replaces, for the inputs it leaves to it.

type NativeKernel = (args: KernelArgs, wasmKernel: KernelFunc) => TensorInfo | TensorInfo[];

/** Output batch → input batch index, for batch shapes that broadcast other than by 1 or equality. */
function broadcastIndex(outer: number[], inputOuter: number[]): Int32Array {
  const lead = outer.length - inputOuter.length;
  const strides: number[] = new Array<number>(outer.length).fill(0);
  let s = 1;
  for (let i = inputOuter.length - 1; i >= 0; i--) {
    if (inputOuter[i] !== 1) strides[i + lead] = s;
    s *= inputOuter[i]!;
  }
  const total = sizeOf(outer);
  const idx = new Int32Array(total);
  const pos = new Array<number>(outer.length).fill(0);
  for (let o = 0; o < total; o++) {
    let v = 0;
    for (let i = 0; i < outer.length; i++) v += pos[i]! * strides[i]!;
    idx[o] = v;
    for (let i = outer.length - 1; i >= 0; i--) {
      if (++pos[i]! < outer[i]!) break;
      pos[i] = 0;
    }
  }
  return idx;
}

const ACTIVATIONS: Record<string, number> = { linear: 0, relu: 1, relu6: 2, leakyrelu: 4, sigmoid: 5, elu: 6 };

function matMulKernel(args: KernelArgs, bias?: TensorInfo, activation = 0, alpha = 0): TensorInfo {
  const { inputs, backend, attrs } = args;
  const a = inputs["a"]!;
  const b = inputs["b"]!;
  const transposeA = attrs["transposeA"] === true;
  const transposeB = attrs["transposeB"] === true;
  const ar = a.shape.length;
  const br = b.shape.length;
  const innerA = transposeA ? a.shape[ar - 2]! : a.shape[ar - 1]!;
  const innerB = transposeB ? b.shape[br - 1]! : b.shape[br - 2]!;
  const m = transposeA ? a.shape[ar - 1]! : a.shape[ar - 2]!;
  const n = transposeB ? b.shape[br - 2]! : b.shape[br - 1]!;
  tf.util.assert(
    innerA === innerB,
    () =>
      `Error in matMul: inner shapes (${innerA}) and (${innerB}) of Tensors with shapes ${a.shape} and ` +
      `${b.shape} and transposeA=${transposeA} and transposeB=${transposeB} must match.`,
  );
  const outerA = a.shape.slice(0, -2);
  const outerB = b.shape.slice(0, -2);
  const outer = tf.broadcast_util.assertAndGetBroadcastShape(outerA, outerB);
  const batch = sizeOf(outer);
  const batchA = sizeOf(outerA);
  const batchB = sizeOf(outerB);
  const aIndex = batchA === 1 || batchA === batch ? null : broadcastIndex(outer, outerA);
  const bIndex = batchB === 1 || batchB === batch ? null : broadcastIndex(outer, outerB);
  const out = backend.makeOutput([...outer, m, n], "float32");
  if (batch === 0 || m === 0 || n === 0) return out;
  native().matmul(
    heapOf(backend),
    offsetOf(backend, a),
    offsetOf(backend, b),
    offsetOf(backend, out),
    batch,
    m,
    n,
    innerA,
    transposeA,
    transposeB,
    batchA,
    batchB,
    aIndex,
    bIndex,
    bias === undefined ? -1 : offsetOf(backend, bias),
    bias === undefined ? 0 : sizeOf(bias.shape),
    activation,
    alpha,
  );
  return out;
}

const batchMatMul: NativeKernel = (args, wasmKernel) => {
  const { a, b } = args.inputs;
  if (a!.dtype !== "float32" || b!.dtype !== "float32") return wasmKernel(args as never);
  return matMulKernel(args);
};

const fusedMatMul: NativeKernel = (args, wasmKernel) => {
  const { a, b, bias, preluActivationWeights } = args.inputs;
  const activation = ACTIVATIONS[String(args.attrs["activation"] ?? "linear")];
  const bt = args.attrs["transposeB"] === true;
  const n = bt ? b!.shape[b!.shape.length - 2]! : b!.shape[b!.shape.length - 1]!;
  const biasOk = bias === undefined || (bias.dtype === "float32" && bias.shape.length === 1 && (bias.shape[0] === n || bias.shape[0] === 1));
  if (a!.dtype !== "float32" || b!.dtype !== "float32" || activation === undefined || preluActivationWeights !== undefined || !biasOk) {
    return wasmKernel(args as never);
  }
  const alpha = Number(args.attrs["leakyreluAlpha"] ?? 0); // as the wasm kernel: unset means 0
  return matMulKernel(args, bias, activation, alpha);
};

const transpose: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const perm = attrs["perm"] as number[];
  if ((x.dtype !== "float32" && x.dtype !== "int32") || perm.every((p, i) => p === i || x.shape[p] === 1)) {
    return wasmKernel(args as never); // other dtypes; and (almost) identity permutations, which wasm does without a copy
  }
  const out = backend.makeOutput(
    perm.map((p) => x.shape[p]!),
    x.dtype,
  );
  if (sizeOf(x.shape) === 0) return out;
  native().transpose(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), Int32Array.from(x.shape), Int32Array.from(perm));
  return out;
};

/** Unary float32 → float32 kernels; ops numbered as in pbrl_native.cc. */
function unary(op: number): NativeKernel {
  return (args, wasmKernel) => {
    const { inputs, backend } = args;
    const x = inputs["x"]!;
    if (x.dtype !== "float32") return wasmKernel(args as never);
    const out = backend.makeOutput(x.shape.slice(), "float32");
    const size = sizeOf(x.shape);
    if (size > 0) native().unary(heapOf(backend), op, offsetOf(backend, x), offsetOf(backend, out), size);
    return out;
  };
}

/** Bytes per element of the dtypes the copy kernels move; undefined for strings. */
function elementBytes(dtype: DataType): number | undefined {
  return dtype === "float32" || dtype === "int32" ? 4 : dtype === "bool" ? 1 : undefined;
}

/**
 * A slice as one strided row copy, when it cuts a single axis `a` (every other axis whole):
 * rows = the product of the axes before `a`, each row a contiguous run. undefined otherwise.
 */
function sliceAs2D(shape: readonly number[], begin: readonly number[], size: readonly number[]): { rows: number; srcRow: number; dstRow: number; offset: number } | undefined {
  if (shape.length === 0) return undefined;
  let cut = -1;
  for (let i = 0; i < shape.length; i++) {
    if (begin[i] === 0 && size[i] === shape[i]) continue;
    if (cut !== -1) return undefined;
    cut = i;
  }
  if (cut === -1) cut = 0; // the whole tensor: one row
  const inner = sizeOf(shape.slice(cut + 1));
  return { rows: sizeOf(shape.slice(0, cut)), srcRow: shape[cut]! * inner, dstRow: size[cut]! * inner, offset: begin[cut]! * inner };
}

/** Slices `x` natively into a new output, or returns undefined for the wasm kernel to do. */
function sliceNative(backend: WasmHeapBackend, x: TensorInfo, begin: number[], size: number[]): TensorInfo | undefined {
  const bytes = elementBytes(x.dtype);
  const plan = sliceAs2D(x.shape, begin, size);
  if (bytes === undefined || plan === undefined) return undefined;
  const out = backend.makeOutput(size.slice(), x.dtype);
  if (plan.rows * plan.dstRow === 0) return out;
  native().copy2d(heapOf(backend), offsetOf(backend, x) + plan.offset * bytes, plan.srcRow * bytes, offsetOf(backend, out), plan.dstRow * bytes, plan.rows, plan.dstRow * bytes);
  return out;
}

// tfjs's wasm Slice, SplitV and Concat copy element by element in JavaScript (except whole
// contiguous ranges): ~5 ms for half of a [8, 4, 128, 64] tensor, as rotary embeddings take it.
const slice: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const [begin, size] = tf.slice_util.parseSliceParams(x as never, attrs["begin"] as number[], attrs["size"] as number[]);
  return sliceNative(backend, x, begin!, size!) ?? wasmKernel(args as never);
};

const splitV: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, x.shape)[0]!;
  if (elementBytes(x.dtype) === undefined) return wasmKernel(args as never);
  const sizes = tf.backend_util.prepareSplitSize(x as never, attrs["numOrSizeSplits"] as number[] | number, axis);
  const begin = new Array<number>(x.shape.length).fill(0);
  return sizes.map((s) => {
    const size = x.shape.slice();
    size[axis] = s;
    const part = sliceNative(backend, x, begin.slice(), size)!; // one cut axis: always a 2-D copy
    begin[axis]! += s;
    return part;
  });
};

const concat: NativeKernel = (args, wasmKernel) => {
  const { backend, attrs } = args;
  const inputs = Object.values(args.inputs) as TensorInfo[];
  const first = inputs[0]!;
  const bytes = elementBytes(first.dtype);
  if (bytes === undefined || inputs.some((t) => t.dtype !== first.dtype)) return wasmKernel(args as never);
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, first.shape)[0]!;
  tf.backend_util.assertParamsConsistent(inputs.map((t) => t.shape), axis);
  const outShape = tf.backend_util.computeOutShape(inputs.map((t) => t.shape), axis);
  const out = backend.makeOutput(outShape, first.dtype);
  const rows = sizeOf(outShape.slice(0, axis));
  const outRow = sizeOf(outShape.slice(axis));
  if (rows * outRow === 0) return out;
  // Each input is a [rows, inner] block copied into columns [at, at + inner) of the output rows.
  let at = 0;
  for (const t of inputs) {
    const inner = sizeOf(t.shape.slice(axis));
    if (inner > 0) native().copy2d(heapOf(backend), offsetOf(backend, t), inner * bytes, offsetOf(backend, out) + at * bytes, outRow * bytes, rows, inner * bytes);
    at += inner;
  }
  return out;
};

// float32 Sum over leading axes (column sums: bias and norm-weight gradients) or trailing axes
// (row sums); wasm first transposes the reduced axes innermost, then sums single-threaded.
const sum: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  if (x.dtype !== "float32") return wasmKernel(args as never);
  const r = x.shape.length;
  const axes = tf.util.parseAxisParam(attrs["axis"] as number | number[], x.shape).slice().sort((p, q) => p - q);
  if (new Set(axes).size !== axes.length) return wasmKernel(args as never);
  const k = axes.length;
  const leading = axes.every((a, i) => a === i);
  const trailing = axes.every((a, i) => a === r - k + i);
  if (k === 0 || (!leading && !trailing)) return wasmKernel(args as never);
  const kept = x.shape.filter((_, i) => !axes.includes(i));
  const outShape = attrs["keepDims"] === true ? x.shape.map((d, i) => (axes.includes(i) ? 1 : d)) : kept;
  const out = backend.makeOutput(outShape, "float32");
  const reduced = sizeOf(axes.map((a) => x.shape[a]!));
  const keptSize = sizeOf(kept);
  if (keptSize === 0) return out;
  // leading: x is [reduced, kept], sum over its rows; trailing: [kept, reduced], within each row.
  if (leading) native().sum(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), reduced, keptSize, true);
  else native().sum(heapOf(backend), offsetOf(backend, x), offsetOf(backend, out), keptSize, reduced, false);
  return out;
};

// tfjs saves every tensor a gradient needs through an Identity kernel, which wasm implements as a
// copy: ~280 copies (~24 ms, and the memory) per training step of the bench model. Tensors are
// immutable and the wasm heap is reference-counted (Reshape shares data the same way), so the
// output shares its input's data, as on the cpu backend.
const identity: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend } = args;
  const x = inputs["x"]!;
  if (x.dtype === "string") return wasmKernel(args as never);
  backend.incRef(x.dataId);
  return { dataId: x.dataId, shape: x.shape.slice(), dtype: x.dtype };
};

// GatherV2 with batchDims 0 as row copies (an embedding lookup, picking hidden states).
const gatherV2: NativeKernel = (args, wasmKernel) => {
  const { inputs, backend, attrs } = args;
  const x = inputs["x"]!;
  const indices = inputs["indices"]!;
  const bytes = elementBytes(x.dtype);
  if (bytes === undefined || indices.dtype !== "int32" || Number(attrs["batchDims"] ?? 0) !== 0) return wasmKernel(args as never);
  const axis = tf.util.parseAxisParam(attrs["axis"] as number, x.shape)[0]!;
  const count = sizeOf(indices.shape);
  const out = backend.makeOutput([...x.shape.slice(0, axis), ...indices.shape, ...x.shape.slice(axis + 1)], x.dtype);
  const outer = sizeOf(x.shape.slice(0, axis));
  const innerBytes = sizeOf(x.shape.slice(axis + 1)) * bytes;
  if (outer * count * innerBytes === 0) return out;
  native().gather(heapOf(backend), offsetOf(backend, x), offsetOf(backend, indices), offsetOf(backend, out), outer, x.shape[axis]!, count, innerBytes);
  return out;
};

/** The kernels that run in the addon on the native backend; every other kernel is wasm's. */
export const NATIVE_KERNELS: Readonly<Record<string, NativeKernel>> = {
  BatchMatMul: batchMatMul,
  _FusedMatMul: fusedMatMul,
  Transpose: transpose,
  Identity: identity,
  GatherV2: gatherV2,
  Slice: slice,
  SplitV: splitV,
  Concat: concat,
  Sum: sum,
  Exp: unary(0),
  Sigmoid: unary(1),
  Sqrt: unary(4),
  Rsqrt: unary(5),
  Reciprocal: unary(7),
};

/**
 * Kernels of pbrl's own fused ops (src/fused-ops.ts), registered for the native backend only;
 * on other backends those ops run as sequences of tfjs ops.
 */
export const PBRL_LOG_SOFTMAX_GRAD = "PbrlLogSoftmaxGrad";

const logSoftmaxGrad = (args: KernelArgs): TensorInfo => {
  const { inputs, backend } = args;
  const { x, lse, targets, dy } = inputs as Record<"x" | "lse" | "targets" | "dy", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const out = backend.makeOutput([rows, cols], "float32");
  if (rows * cols === 0) return out;
  native().logsoftmaxGrad(heapOf(backend), offsetOf(backend, x), offsetOf(backend, lse), offsetOf(backend, targets), offsetOf(backend, dy), offsetOf(backend, out), rows, cols);
  return out;
};

export const PBRL_LOG_SOFTMAX_SELECT = "PbrlLogSoftmaxSelect";

const logSoftmaxSelect = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { x, targets } = inputs as Record<"x" | "targets", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const value = backend.makeOutput([rows], "float32");
  const lse = backend.makeOutput([rows, 1], "float32");
  if (rows > 0) native().logsoftmaxSelect(heapOf(backend), offsetOf(backend, x), offsetOf(backend, targets), offsetOf(backend, value), offsetOf(backend, lse), rows, cols);
  return [value, lse];
};

export const PBRL_SCATTER_ADD_ROWS = "PbrlScatterAddRows";

const scatterAddRows = (args: KernelArgs): TensorInfo => {
  const { inputs, backend, attrs } = args;
  const { dy, indices } = inputs as Record<"dy" | "indices", TensorInfo>;
  const [count, cols] = dy.shape as [number, number];
  const rows = attrs["rows"] as number;
  const out = backend.makeOutput([rows, cols], "float32");
  if (rows * cols > 0) native().scatterAddRows(heapOf(backend), offsetOf(backend, dy), offsetOf(backend, indices), offsetOf(backend, out), count, rows, cols);
  return out;
};

export const PBRL_RMS_NORM = "PbrlRmsNorm";
export const PBRL_RMS_NORM_GRAD = "PbrlRmsNormGrad";
export const PBRL_SWIGLU = "PbrlSwiglu";
export const PBRL_SWIGLU_GRAD = "PbrlSwigluGrad";

const rmsNorm = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { x, weight } = inputs as Record<"x" | "weight", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const y = backend.makeOutput([rows, cols], "float32");
  const rstd = backend.makeOutput([rows], "float32");
  if (rows * cols === 0) return [y, rstd];
  native().rmsnorm(heapOf(backend), offsetOf(backend, x), offsetOf(backend, weight), offsetOf(backend, y), offsetOf(backend, rstd), rows, cols, attrs["eps"] as number);
  return [y, rstd];
};

const rmsNormGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { x, weight, rstd, dy } = inputs as Record<"x" | "weight" | "rstd" | "dy", TensorInfo>;
  const [rows, cols] = x.shape as [number, number];
  const dx = backend.makeOutput([rows, cols], "float32");
  const dw = backend.makeOutput([cols], "float32");
  const heap = heapOf(backend);
  if (rows === 0) new Float32Array(heap, offsetOf(backend, dw), cols).fill(0);
  else native().rmsnormGrad(heap, offsetOf(backend, x), offsetOf(backend, weight), offsetOf(backend, rstd), offsetOf(backend, dy), offsetOf(backend, dx), offsetOf(backend, dw), rows, cols);
  return [dx, dw];
};

const swiglu = (args: KernelArgs): TensorInfo => {
  const { inputs, backend } = args;
  const { gate, up } = inputs as Record<"gate" | "up", TensorInfo>;
  const y = backend.makeOutput(gate.shape, "float32");
  const n = sizeOf(gate.shape);
  if (n > 0) native().swiglu(heapOf(backend), offsetOf(backend, gate), offsetOf(backend, up), offsetOf(backend, y), n);
  return y;
};

const swigluGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend } = args;
  const { gate, up, dy } = inputs as Record<"gate" | "up" | "dy", TensorInfo>;
  const dg = backend.makeOutput(gate.shape, "float32");
  const du = backend.makeOutput(gate.shape, "float32");
  const n = sizeOf(gate.shape);
  if (n > 0) native().swigluGrad(heapOf(backend), offsetOf(backend, gate), offsetOf(backend, up), offsetOf(backend, dy), offsetOf(backend, dg), offsetOf(backend, du), n);
  return [dg, du];
};

export const PBRL_ROPE = "PbrlRope";
export const PBRL_ATTENTION = "PbrlAttention";
export const PBRL_ATTENTION_GRAD = "PbrlAttentionGrad";
export const PBRL_ADAMW = "PbrlAdamW";

const rope = (args: KernelArgs): TensorInfo => {
  const { inputs, backend, attrs } = args;
  const { x, cos, sin } = inputs as Record<"x" | "cos" | "sin", TensorInfo>;
  const [b, h, t, d] = x.shape as [number, number, number, number];
  const y = backend.makeOutput(x.shape, "float32");
  if (b * h * t * d > 0) {
    native().rope(heapOf(backend), offsetOf(backend, x), offsetOf(backend, cos), offsetOf(backend, sin), offsetOf(backend, y), b, h, t, d, attrs["backward"] === 1);
  }
  return y;
};

/** [b, h, kv, t, s, d] of an attention call, from q [b, h, t, d] and k [b, kv, s, d]. */
function attentionDims(q: TensorInfo, k: TensorInfo): [number, number, number, number, number, number] {
  const [b, h, t, d] = q.shape as [number, number, number, number];
  return [b, h, k.shape[1]!, t, k.shape[2]!, d];
}

const attention = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { q, k, v, keyMask } = inputs as Record<"q" | "k" | "v" | "keyMask", TensorInfo>;
  const [b, h, kv, t, s, d] = attentionDims(q, k);
  const out = backend.makeOutput([b, t, h, d], "float32");
  const probs = backend.makeOutput([b, h, t, s], "float32");
  if (b * h * t * d > 0) {
    const o = (x: TensorInfo) => offsetOf(backend, x);
    native().attention(heapOf(backend), o(q), o(k), o(v), o(keyMask), o(out), o(probs), b, h, kv, t, s, d, attrs["scale"] as number);
  }
  return [out, probs];
};

const attentionGrad = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { q, k, v, keyMask, probs, dy } = inputs as Record<"q" | "k" | "v" | "keyMask" | "probs" | "dy", TensorInfo>;
  const [b, h, kv, t, s, d] = attentionDims(q, k);
  const grads = [backend.makeOutput(q.shape, "float32"), backend.makeOutput(k.shape, "float32"), backend.makeOutput(v.shape, "float32")] as const;
  const o = (x: TensorInfo) => offsetOf(backend, x);
  if (b * kv * s * d > 0) {
    native().attentionGrad(heapOf(backend), o(q), o(k), o(v), o(keyMask), o(probs), o(dy), b, h, kv, t, s, d, attrs["scale"] as number, o(grads[0]), o(grads[1]), o(grads[2]));
  }
  return [...grads];
};

const adamw = (args: KernelArgs): TensorInfo[] => {
  const { inputs, backend, attrs } = args;
  const { p, g, m, v } = inputs as Record<"p" | "g" | "m" | "v", TensorInfo>;
  const outs = [backend.makeOutput(p.shape, "float32"), backend.makeOutput(p.shape, "float32"), backend.makeOutput(p.shape, "float32")] as const;
  const n = sizeOf(p.shape);
  const k = (name: string) => attrs[name] as number;
  if (n > 0) {
    const o = (t: TensorInfo) => offsetOf(backend, t);
    native().adamw(heapOf(backend), o(p), o(g), o(m), o(v), o(outs[0]), o(outs[1]), o(outs[2]), n, k("decay"), k("b1"), k("c1"), k("b2"), k("c2"), k("bc2Sqrt"), k("eps"), k("stepSize"));
  }
  return [...outs];
};

/** pbrl's own kernels (src/fused-ops.ts), by name: registered for the native backend only. */
const FUSED_KERNELS: Record<string, (args: KernelArgs) => TensorInfo | TensorInfo[]> = {
  [PBRL_LOG_SOFTMAX_GRAD]: logSoftmaxGrad,
  [PBRL_LOG_SOFTMAX_SELECT]: logSoftmaxSelect,
  [PBRL_SCATTER_ADD_ROWS]: scatterAddRows,
  [PBRL_RMS_NORM]: rmsNorm,
  [PBRL_RMS_NORM_GRAD]: rmsNormGrad,
  [PBRL_SWIGLU]: swiglu,
  [PBRL_SWIGLU_GRAD]: swigluGrad,
  [PBRL_ROPE]: rope,
  [PBRL_ATTENTION]: attention,
  [PBRL_ATTENTION_GRAD]: attentionGrad,
  [PBRL_ADAMW]: adamw,
};

/** Names of pbrl's fused kernels, which exist on the native backend only. */
export const FUSED_KERNEL_NAMES: readonly string[] = Object.keys(FUSED_KERNELS);

export const NATIVE_BACKEND_NAME = "native";
/** Below wasm (2), so tfjs never picks `native` on its own. */
const NATIVE_PRIORITY = 1;

/**
 * Registers the `native` backend (once): a second wasm backend instance from the wasm backend's
 * own factory, every wasm kernel, and the native replacements. The caller then `setBackend`s it.
 */
export function registerNativeBackend(loadedAddon: NativeAddon): void {
  addon ??= loadedAddon;
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

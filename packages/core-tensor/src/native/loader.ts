/**
 * Finding, loading and initialising pbrl's N-API addon (packages/core-tensor/native): its path
 * (`PBRL_NATIVE_ADDON` overrides it; `PBRL_NATIVE=off` pretends it is absent), its thread count,
 * the OpenBLAS kernel family it runs, and the check that it has every function pbrl calls.
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { loadAddonOnce } from "../addon-load.js";
import { addonBlasControl, blasCoreType, chooseAndApplyBlasCore, withBlasEnv, type CpuFeatures } from "../blas-kernels.js";
import type { AdamWAttrValues } from "../fused-kernel-names.js";

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

/** The sizes and scale that {@link NativeAddon.attention} and its gradient take: q [b, h, t, d], k and v [b, kv, s, d]. */
type AttentionSizes = [b: number, h: number, kv: number, t: number, s: number, d: number, scale: number];

/** The addon's functions (native/src, registered in module.cc). Offsets are byte offsets into `heap`. */
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
  rope(
    heap: ArrayBuffer,
    xOff: number,
    cosOff: number,
    sinOff: number,
    yOff: number,
    batch: number,
    heads: number,
    len: number,
    dim: number,
    backward: boolean,
  ): void;
  /**
   * Causal attention of q [b, h, t, d] over k, v [b, kv, s, d] with a key mask [b, s] (int32): out
   * [b, t, h, d] and the probabilities [b, h, t, s].
   */
  attention(
    ...args: [heap: ArrayBuffer, qOff: number, kOff: number, vOff: number, maskOff: number, outOff: number, probsOff: number, ...sizes: AttentionSizes]
  ): void;
  /** The gradients of {@link attention} with respect to q, k and v, given its probabilities and the upstream dy [b, t, h, d]. */
  attentionGrad(
    ...args: [
      heap: ArrayBuffer,
      qOff: number,
      kOff: number,
      vOff: number,
      maskOff: number,
      probsOff: number,
      dyOff: number,
      ...sizes: AttentionSizes,
      dqOff: number,
      dkOff: number,
      dvOff: number,
    ]
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
    ...args: [
      heap: ArrayBuffer,
      pOff: number,
      gOff: number,
      mOff: number,
      vOff: number,
      pOutOff: number,
      mOutOff: number,
      vOutOff: number,
      n: number,
      ...scalars: AdamWAttrValues,
    ]
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

/** Where the install step builds the addon (native/build.mjs). The same relative path from src/native/ and dist/native/. */
export const DEFAULT_NATIVE_ADDON_PATH = fileURLToPath(new URL("../../native/build/Release/pbrl_native.node", import.meta.url));

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
  const reason = chooseAndApplyBlasCore(
    addonBlasControl(addon, () => addon.info().blasCore),
    override,
  );
  return { info: addon.info(), reason };
}

/** Every function of {@link NativeAddon}, checked when the addon loads. */
const REQUIRED_ADDON_FUNCTIONS = [
  "init",
  "info",
  "cpuFeatures",
  "blasCores",
  "setBlasCore",
  "matmul",
  "transpose",
  "unary",
  "copy2d",
  "gather",
  "scatterAddRows",
  "sum",
  "logsoftmaxGrad",
  "logsoftmaxSelect",
  "rmsnorm",
  "rmsnormGrad",
  "swiglu",
  "swigluGrad",
  "rope",
  "attention",
  "attentionGrad",
  "decode",
  "sample",
  "adamw",
] as const satisfies readonly (keyof NativeAddon)[];

const loaded = new Map<string, NativeLoad>();

/**
 * Loads the addon, or says why it cannot: disabled by `PBRL_NATIVE=off`, not built (the file is
 * missing), or failing to load (e.g. libopenblas.so.0 gone since the build). Never throws; the
 * outcome is cached per path.
 */
export function loadNativeAddon(): NativeLoad {
  const core = blasCoreType(process.env);
  const inherited = process.env["OPENBLAS_CORETYPE"] ?? "";
  return loadAddonOnce<NativeAddon, Extract<NativeLoad, { ok: true }>>({
    name: "native addon",
    switchVar: "PBRL_NATIVE",
    path: nativeAddonPath,
    cache: loaded,
    required: REQUIRED_ADDON_FUNCTIONS,
    require: (path) => withBlasEnv({ OPENBLAS_CORETYPE: core }, () => createRequire(import.meta.url)(path) as NativeAddon),
    init: (addon, path) => {
      addon.init(nativeThreads());
      const { info, reason } = applyBlasCoreChoice(addon, core);
      return { ok: true, addon, info, path, blasCoreReason: reason, ...(inherited !== "" && core === undefined ? { ignoredCoreType: inherited } : {}) };
    },
  });
}

/**
 * pbrl's libtorch addon (packages/core-tensor/libtorch): an N-API module linked against the
 * libtorch of a `torch` Python package or a libtorch archive. Tensors live in ATen — CPU memory
 * without the wasm heap's 4 GiB ceiling, or CUDA memory — and JavaScript holds integer ids.
 *
 * Every function that makes a tensor returns a {@link TensorRef}: `[id, dtype code, ...shape]`.
 * Ids belong to the JavaScript thread that made them (each agent worker has a table of its own).
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { REBUILD_ADDONS_COMMAND, WORKSPACE_REBUILD_ADDONS_COMMAND } from "../addon-hints.js";
import { loadAddonOnce } from "../addon-load.js";
import { addonBlasControl, blasCoreType, chooseAndApplyBlasCore, withBlasEnv, type CpuFeatures } from "../blas-kernels.js";
import type { AdamWAttrValues } from "../fused-kernel-names.js";

/** How to get the libtorch backend, appended to every message saying it is unavailable. */
export const LIBTORCH_INSTALL_HINT =
  "it needs libtorch and pbrl's libtorch addon, which @pbrl/core-tensor's install step builds when it finds libtorch: " +
  "set PBRL_LIBTORCH to a libtorch folder (the archive from pytorch.org, or a `torch` package's folder), or install PyTorch " +
  "for `python3` (or the Python in PBRL_PYTHON): `pip install torch`; then build the addon: " +
  `\`${REBUILD_ADDONS_COMMAND}\` (in a pbrl checkout: \`${WORKSPACE_REBUILD_ADDONS_COMMAND}\`)`;

/** `[id, dtype code (0 float32, 1 int32, 2 bool), ...shape]` of a tensor the addon made. */
export type TensorRef = number[];

export interface LibtorchInfo {
  torchVersion: string;
  /** ATen's intra-op threads (process-wide). */
  threads: number;
  cuda: boolean;
  cudaDevices: number;
  mkl: boolean;
  mkldnn: boolean;
  /** The CPU kernels ATen dispatches to: "AVX512", "AVX2", "DEFAULT". */
  cpuCapability: string;
  /** Freed large CPU blocks the addon's allocator keeps for reuse (libtorch/src/allocator.cc), MB. */
  cpuCacheMB: number;
  /** Whether pbrl's own parallel loops (AdamW, the fused loss) share ATen's OpenMP threads; false: one thread (libtorch/build.mjs). */
  openmp: boolean;
  /** Whether ATen's own intra-op parallelism is OpenMP (AT_PARALLEL_OPENMP of the libtorch built against). */
  atenOpenmp: boolean;
  /** bfloat16 copies of float32 product operands made so far in bf16 (TensorTable::Bf16Copy), on this thread. */
  bf16Casts: number;
}

/** The addon's functions (libtorch/src/*.cc). Tensors are passed by id. */
export interface LibtorchAddon {
  init(threads: number): LibtorchInfo;
  info(): LibtorchInfo;
  /** Unmaps the allocator's cached blocks and trims glibc's heap (libtorch/src/allocator.cc); returns the cached MB released. */
  releaseCpuCache(): number;
  write(values: Float32Array | Int32Array | Uint8Array, shape: readonly number[], dtype: number): TensorRef;
  read(id: number): Float32Array | Int32Array | Uint8Array;
  free(id: number): void;
  share(id: number): TensorRef;
  live(): number;
  setDevice(device: string): void;
  checkDevice(device: string): void;
  /** Where tensors made from host values go (this thread). */
  defaultDevice(): string;
  deviceOf(id: number): string;
  to(id: number, device: string): TensorRef;
  setBf16(on: boolean): void;
  bf16(): boolean;
  /**
   * How bf16 products run on the CPU: "auto" (bfloat16 GEMMs where the CPU has AVX512-BF16 or AMX,
   * else float32 products over the bfloat16-rounded operands), or either one forced; process-wide.
   */
  setBf16Gemm(mode: "auto" | "bfloat16" | "float32"): void;
  /** What bf16 products on the CPU run as now. */
  bf16Gemm(): "bfloat16" | "float32";
  /** Makes the bfloat16 copies that bf16 products read for the float32 matrices among `ids` now. */
  makeBf16Copies(ids: number[]): void;
  /**
   * A linear layer of a frozen weight with its LoRA update, x·Wᵀ (+ bias) + s·(dropout(x)·Aᵀ)·Bᵀ, in one
   * call → [out, low = s·dropout(x)·Aᵀ, the mask's keys]; the dropout stream's state (null: no
   * dropout) advances in place by the two draws of the keys.
   */
  loraLinear(x: number, w: number, bias: number | null, a: number, b: number, state: Uint32Array | null, scaling: number, p: number, keep: number): TensorRef[];
  /** The gradients [dx, dA, dB] of loraLinear's output, given its low and mask keys. */
  loraLinearBackward(dy: number, x: number, w: number, a: number, b: number, low: number, keys: number, scaling: number, p: number, keep: number): TensorRef[];
  /** Keeps only the bfloat16 copies of the float32 matrices among `ids` (weights that never change); returns the float32 bytes freed. */
  storeBf16(ids: number[]): number;
  /** Whether the addon is linked against OpenBLAS, its kernel family and whether float32 CPU products use it. */
  blasInfo(): { linked: boolean; blasCore: string; blasConfig: string; blasThreads: number; chosen: boolean; chosenFewRows: boolean };
  cpuFeatures(): CpuFeatures;
  blasCores(): string[];
  setBlasCore(name: string): string;
  /** Float32 CPU products through OpenBLAS (true) or ATen (false), OpenBLAS with `threads`; those of at most 64 rows as `onFewRows` says (default `on`). */
  useOpenBlas(on: boolean, threads: number, onFewRows?: boolean): void;
  /** GFLOPS of ATen's and OpenBLAS's float32 product at a training step's shape and at a decoding step's (16 rows; OpenBLAS 0 when not linked). */
  gemmBench(): { aten: number; openblas: number; atenFewRows: number; openblasFewRows: number };
  decoderCreate(weightIds: readonly number[], dims: readonly number[], rmsNormEps: number, bf16Weights: boolean, rowPrompt: Int32Array): number;
  decoderLoad(decoder: number, layer: number, k: number, v: number, length: number): void;
  decoderStep(decoder: number, ids: Int32Array, cos: Float32Array, sin: Float32Array, keyMask: Uint8Array): TensorRef;
  decoderKeep(decoder: number, rows: Int32Array): void;
  decoderFree(decoder: number): void;
  /** One token per row of [rows, vocab] logits (see libtorch/src/sampling.cc); a uniform < 0 skips its row. */
  sampleRows(logits: number, uniforms: Float64Array, greedy: boolean, temperature: number, topK: number, topP: number): Int32Array;

  unary(name: string, x: number): TensorRef;
  binary(name: string, a: number, b: number, outDtype: number): TensorRef;
  addN(ids: readonly number[]): TensorRef;
  cast(x: number, dtype: number): TensorRef;
  clip(x: number, min: number, max: number): TensorRef;
  leakyRelu(x: number, alpha: number): TensorRef;
  step(x: number, alpha: number): TensorRef;
  select(condition: number, a: number, b: number): TensorRef;
  fill(shape: readonly number[], value: number, dtype: number): TensorRef;
  fillLike(x: number, value: number, dtype: number): TensorRef;
  range(start: number, step: number, count: number, dtype: number): TensorRef;
  oneHot(indices: number, depth: number, onValue: number, offValue: number, dtype: number): TensorRef;

  reshape(x: number, shape: readonly number[]): TensorRef;
  transpose(x: number, perm: readonly number[]): TensorRef;
  slice(x: number, begin: readonly number[], size: readonly number[]): TensorRef;
  stridedSlice(x: number, begin: readonly number[], end: readonly number[], strides: readonly number[]): TensorRef;
  concat(ids: readonly number[], axis: number): TensorRef;
  stack(ids: readonly number[], axis: number): TensorRef;
  unstack(x: number, axis: number): TensorRef[];
  splitV(x: number, sizes: readonly number[], axis: number): TensorRef[];
  tile(x: number, reps: readonly number[]): TensorRef;
  pad(x: number, paddings: readonly number[], value: number): TensorRef;
  reverse(x: number, dims: readonly number[]): TensorRef;
  broadcastTo(x: number, shape: readonly number[]): TensorRef;
  gather(x: number, indices: number, axis: number, batchDims: number): TensorRef;
  gatherNd(x: number, indices: number): TensorRef;
  scatterNd(indices: number, updates: number, shape: readonly number[]): TensorRef;
  unsortedSegmentSum(data: number, segmentIds: number, numSegments: number): TensorRef;

  reduce(name: string, x: number, axes: readonly number[], keepDims: boolean): TensorRef;
  argExtreme(isMax: boolean, x: number, axis: number): TensorRef;
  softmax(x: number, dim: number): TensorRef;
  cumulative(isProduct: boolean, x: number, axis: number, exclusive: boolean, reverse: boolean): TensorRef;
  topk(x: number, k: number, sorted: boolean): TensorRef[];

  /** weightA/weightB: the operand is a weight; in bf16 such a product returns a bfloat16 activation. */
  matmul(
    a: number,
    b: number,
    transposeA: boolean,
    transposeB: boolean,
    bias: number | null,
    activation?: string,
    alpha?: number,
    prelu?: number | null,
    weightA?: boolean,
    weightB?: boolean,
  ): TensorRef;

  rmsnorm(x: number, weight: number, eps: number): TensorRef[];
  rmsnormGrad(x: number, weight: number, rstd: number, dy: number): TensorRef[];
  swiglu(gate: number, up: number): TensorRef;
  swigluGrad(gate: number, up: number, dy: number): TensorRef[];
  rope(x: number, cos: number, sin: number, backward: boolean): TensorRef;
  logsoftmaxSelect(x: number, targets: number): TensorRef[];
  logsoftmaxGrad(x: number, lse: number, targets: number, dy: number): TensorRef;
  scatterAddRows(dy: number, indices: number, rows: number): TensorRef;
  /** One AdamW step; with `mayOverwrite` (no other tfjs tensor shares p, m, v) the addon may update them in place. */
  adamw(...args: [p: number, g: number, m: number, v: number, ...scalars: AdamWAttrValues, mayOverwrite: boolean]): TensorRef[];
  attention(q: number, k: number, v: number, keyMask: number, scale: number): TensorRef[];
  attentionGrad(q: number, k: number, v: number, keyMask: number, probs: number, dy: number, scale: number): TensorRef[];
}

/** Which library computes float32 products on the CPU, and why (for the backend line). */
export interface GemmChoice {
  library: "openblas" | "aten";
  /** For products of at most 64 rows (decoding steps), chosen apart. */
  fewRows: "openblas" | "aten";
  reason: string;
}

export type LibtorchLoad =
  { ok: true; addon: LibtorchAddon; info: LibtorchInfo; path: string; gemm: GemmChoice } | { ok: false; reason: string; disabled: boolean };

/**
 * Float32 CPU products through OpenBLAS or ATen (MKL): PBRL_LIBTORCH_GEMM=openblas|aten when set,
 * else whichever measures faster here (a [512, 768] · [768, 2048] product, best of five: on an AMD
 * EPYC Zen 5 OpenBLAS's AVX-512 kernels ran 478 GFLOPS to ATen's 223), OpenBLAS only when it is
 * linked and at least 5% faster. Products of at most 64 rows (decoding steps) are chosen apart by a
 * [16, 576] · [576, 1536] product: on an AMD EPYC Zen 1 the two libraries ran the training shape
 * alike (68 and 65 GFLOPS, so either won by noise) and OpenBLAS ran 16 rows 1.6 times as fast.
 */
function chooseGemm(addon: LibtorchAddon, threads: number): GemmChoice {
  const blas = addon.blasInfo();
  if (!blas.linked) return { library: "aten", fewRows: "aten", reason: "this addon was built without OpenBLAS" };
  const forced = process.env["PBRL_LIBTORCH_GEMM"] ?? "";
  const override = blasCoreType(process.env);
  const core = chooseAndApplyBlasCore(
    addonBlasControl(addon, () => addon.blasInfo().blasCore),
    override,
  );
  const family = `OpenBLAS ${addon.blasInfo().blasCore} kernels (${core})`;
  if (forced === "openblas" || forced === "aten") {
    addon.useOpenBlas(forced === "openblas", threads);
    return { library: forced, fewRows: forced, reason: `set by PBRL_LIBTORCH_GEMM${forced === "openblas" ? `; ${family}` : ""}` };
  }
  addon.useOpenBlas(false, threads);
  const choice = gemmChoiceFromBench(addon.gemmBench(), family);
  addon.useOpenBlas(choice.library === "openblas", threads, choice.fewRows === "openblas");
  return choice;
}

/**
 * The choice gemmBench's rates make (OpenBLAS only when at least 5% faster), and the backend line's
 * words for it: the chosen library's rate first, then the other's, each named.
 */
export function gemmChoiceFromBench(g: ReturnType<LibtorchAddon["gemmBench"]>, family: string): GemmChoice {
  const useOpenBlas = g.openblas > 1.05 * g.aten;
  const fewRows = g.openblasFewRows > 1.05 * g.atenFewRows;
  const [o, a, or, ar] = [g.openblas, g.aten, g.openblasFewRows, g.atenFewRows].map(Math.round);
  const main = useOpenBlas ? `${family}, measured ${o} GFLOPS to ATen's ${a}` : `ATen's, measured ${a} GFLOPS to ${o} for ${family}`;
  const rows = fewRows ? `OpenBLAS, measured ${or} GFLOPS to ATen's ${ar}` : `ATen's, measured ${ar} GFLOPS to OpenBLAS's ${or}`;
  return {
    library: useOpenBlas ? "openblas" : "aten",
    fewRows: fewRows ? "openblas" : "aten",
    reason: `${main}; at most 64 rows (decoding): ${rows} on 16 rows`,
  };
}

/** Where the install step builds the addon (libtorch/build.mjs). The same relative path from src/ and dist/. */
export const DEFAULT_LIBTORCH_ADDON_PATH = fileURLToPath(new URL("../../libtorch/build/Release/pbrl_libtorch.node", import.meta.url));

/** The addon path in effect: `PBRL_LIBTORCH_ADDON` when set, else the build output. */
export function libtorchAddonPath(): string {
  const p = process.env["PBRL_LIBTORCH_ADDON"];
  return p !== undefined && p !== "" ? p : DEFAULT_LIBTORCH_ADDON_PATH;
}

/** Every function of {@link LibtorchAddon}, checked when the addon loads (an addon built from older sources lacks some). */
const REQUIRED = [
  "init",
  "info",
  "write",
  "read",
  "free",
  "share",
  "live",
  "setDevice",
  "checkDevice",
  "defaultDevice",
  "deviceOf",
  "to",
  "setBf16",
  "bf16",
  "setBf16Gemm",
  "bf16Gemm",
  "makeBf16Copies",
  "storeBf16",
  "sampleRows",
  "loraLinear",
  "loraLinearBackward",
  "decoderCreate",
  "decoderLoad",
  "decoderStep",
  "decoderKeep",
  "decoderFree",
  "blasInfo",
  "cpuFeatures",
  "blasCores",
  "setBlasCore",
  "useOpenBlas",
  "gemmBench",
  "unary",
  "binary",
  "addN",
  "cast",
  "clip",
  "leakyRelu",
  "step",
  "select",
  "fill",
  "fillLike",
  "range",
  "oneHot",
  "reshape",
  "transpose",
  "slice",
  "stridedSlice",
  "concat",
  "stack",
  "unstack",
  "splitV",
  "tile",
  "pad",
  "reverse",
  "broadcastTo",
  "gather",
  "gatherNd",
  "scatterNd",
  "unsortedSegmentSum",
  "reduce",
  "argExtreme",
  "softmax",
  "cumulative",
  "topk",
  "matmul",
  "rmsnorm",
  "rmsnormGrad",
  "swiglu",
  "swigluGrad",
  "rope",
  "logsoftmaxSelect",
  "logsoftmaxGrad",
  "scatterAddRows",
  "adamw",
  "attention",
  "attentionGrad",
  "releaseCpuCache",
] as const satisfies readonly (keyof LibtorchAddon)[];

const loaded = new Map<string, LibtorchLoad>();

/**
 * Loads the addon, or says why it cannot: disabled by `PBRL_LIBTORCH=off`, not built, or failing
 * to load (e.g. the torch package it was built against has been removed). Never throws; cached per path.
 */
export function loadLibtorchAddon(threads: number): LibtorchLoad {
  return loadAddonOnce<LibtorchAddon, Extract<LibtorchLoad, { ok: true }>>({
    name: "libtorch addon",
    switchVar: "PBRL_LIBTORCH",
    path: libtorchAddonPath,
    cache: loaded,
    required: REQUIRED,
    require: (path) => {
      // libtorch's OpenMP threads otherwise spin for a long while between parallel regions:
      // beside Node's own threads, agent workers or any other busy process, a spinning thread
      // holds the core a descheduled one needs (a bf16 training test took 14.8 s instead of
      // 0.95 s on this project's 2-core machine under load). A short spin, then sleep, keeps
      // that away and loses nothing when the machine is idle (a 135M training step 2.55 s, as
      // with spinning; 2.75 s with no spin at all). Read once, when libgomp loads; a user's
      // values win.
      process.env["OMP_WAIT_POLICY"] ??= "PASSIVE";
      process.env["GOMP_SPINCOUNT"] ??= "10000";
      // OpenBLAS, when linked, picks its kernels as it loads: as for the native addon, from the CPU's
      // instruction sets rather than an inherited OPENBLAS_CORETYPE (blas-kernels.ts). Its own
      // threads, between two products, yield the core in a loop for 2^28 cycles before they sleep,
      // each yield a system call, while ATen's threads want the cores: 0.3–0.8 s of system time in
      // a float32 SmolLM2-135M step of 1.4–2.1 s on 2 cores; after 2^4 cycles, 0.1 s and 1.44–1.54 s.
      // A user's OPENBLAS_THREAD_TIMEOUT wins.
      const blasEnv = { OPENBLAS_CORETYPE: blasCoreType(process.env), OPENBLAS_THREAD_TIMEOUT: process.env["OPENBLAS_THREAD_TIMEOUT"] ?? "4" };
      return withBlasEnv(blasEnv, () => createRequire(import.meta.url)(path) as LibtorchAddon);
    },
    init: (addon, path) => {
      const info = addon.init(threads);
      return { ok: true, addon, info, path, gemm: chooseGemm(addon, threads) };
    },
  });
}

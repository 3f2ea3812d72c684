/**
 * Which OpenBLAS kernels the native backend's matrix products run.
 *
 * OpenBLAS (a DYNAMIC_ARCH build, as distributions ship it) picks its kernel family once, when it
 * loads, from a table of CPU models. On a model it does not know — a VM that reports a generic
 * "Intel Xeon Processor" or "AMD EPYC", a CPU newer than the library — it falls back to its
 * oldest x86-64 kernels (Prescott, SSE3), which ran a bench training step at 0.17× PyTorch on
 * an AVX-512 machine. pbrl reads the instruction sets the CPU and OS support instead, and when
 * OpenBLAS's pick is older than they allow, switches to the family made for them.
 */

/** x86 instruction-set extensions usable by this process (CPU and OS), as the addon reports them. */
export interface CpuFeatures {
  avx: boolean;
  fma: boolean;
  avx2: boolean;
  avx512f: boolean;
  avx512dq: boolean;
  avx512cd: boolean;
  avx512bw: boolean;
  avx512vl: boolean;
  avx512bf16: boolean;
  amx: boolean;
}

/** How recent a kernel family's instructions are: 1 SSE, 2 AVX, 3 AVX2 + FMA, 4 AVX-512. */
type IsaLevel = 1 | 2 | 3 | 4;

/** The x86 families of OpenBLAS above SSE, by the instructions their sgemm uses (lower case). */
const CORE_LEVELS: Readonly<Record<string, IsaLevel>> = {
  sapphirerapids: 4,
  cooperlake: 4,
  skylakex: 4,
  haswell: 3,
  zen: 3,
  excavator: 3,
  sandybridge: 2,
  bulldozer: 2,
  piledriver: 2,
  steamroller: 2,
};

/** The families to switch to for a level, best first. */
function targetsFor(level: IsaLevel, f: CpuFeatures): string[] {
  if (level === 4) return f.avx512bf16 ? ["Cooperlake", "SkylakeX"] : ["SkylakeX"];
  if (level === 3) return ["Haswell"];
  if (level === 2) return ["Sandybridge"];
  return [];
}

function isaLevel(f: CpuFeatures): IsaLevel {
  if (f.avx512f && f.avx512dq && f.avx512cd && f.avx512bw && f.avx512vl) return 4;
  if (f.avx2 && f.fma) return 3;
  return f.avx ? 2 : 1;
}

/** The CPU's instruction sets in a few words, for the backend line: "AVX-512 (F, DQ, CD, BW, VL, BF16)". */
export function describeCpuFeatures(f: CpuFeatures): string {
  const level = isaLevel(f);
  if (level === 4) return `AVX-512 (F, DQ, CD, BW, VL${f.avx512bf16 ? ", BF16" : ""}${f.amx ? ", AMX" : ""})`;
  if (level === 3) return "AVX2 + FMA";
  return level === 2 ? "AVX" : "SSE only";
}

export interface BlasCoreChoice {
  /** The family to switch OpenBLAS to, or undefined to keep what it loaded with. */
  switchTo?: string;
  /** Why, in a few words, for the backend line. */
  reason: string;
}

/**
 * Decides OpenBLAS's kernel family from the CPU's features. `detected` is the family OpenBLAS
 * loaded with, `available` the families this OpenBLAS can switch to (empty when it cannot), and
 * `override` a family the user set with PBRL_BLAS_CORETYPE (already applied at load, never
 * second-guessed). OpenBLAS's own pick stays when it is as recent as the CPU allows — it may
 * know the model better (e.g. its Zen tuning) — and is replaced when it is older.
 */
export function chooseBlasCore(input: {
  features: CpuFeatures;
  detected: string;
  available: readonly string[];
  override?: string | undefined;
}): BlasCoreChoice {
  const { features, detected, available, override } = input;
  if (override !== undefined && override !== "") return { reason: "set by PBRL_BLAS_CORETYPE" };
  const cpu = describeCpuFeatures(features);
  const want = isaLevel(features);
  const have = CORE_LEVELS[detected.toLowerCase()] ?? 1;
  if (have >= want) return { reason: `OpenBLAS's choice for the CPU's ${cpu}` };
  const target = targetsFor(want, features).find((t) => available.includes(t));
  if (target === undefined) {
    const why = available.length === 0 ? "this OpenBLAS cannot switch kernels" : `this OpenBLAS has no ${targetsFor(want, features).join(" or ")} kernels`;
    return { reason: `OpenBLAS's choice, older than the CPU's ${cpu}: ${why}; set PBRL_BLAS_CORETYPE to choose` };
  }
  return { switchTo: target, reason: `chosen by pbrl for the CPU's ${cpu}; OpenBLAS's model table picked ${detected}` };
}

/**
 * OPENBLAS_CORETYPE while one of pbrl's addons loads OpenBLAS (which reads it once, then):
 * `PBRL_BLAS_CORETYPE` when set, else none, so that OpenBLAS first picks its kernels itself and
 * pbrl then checks that pick against the CPU's instruction sets. An inherited OPENBLAS_CORETYPE is
 * not applied: machines like this project's set it to Haswell for every program, which held the
 * native addon to AVX2 kernels on a Zen 5 with AVX-512 (a bench training step's matrix products
 * 249 → 147 ms with AVX-512 kernels; PyTorch's MKL uses AVX-512 there too).
 */
export function blasCoreType(env: NodeJS.ProcessEnv): string | undefined {
  const chosen = env["PBRL_BLAS_CORETYPE"] ?? "";
  return chosen !== "" ? chosen : undefined;
}

/**
 * Runs `load` (which loads OpenBLAS, reading these variables once) with the environment variables
 * in `vars` set (unset where undefined), then restores them for child processes.
 */
export function withBlasEnv<T>(vars: Record<string, string | undefined>, load: () => T): T {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (values: Record<string, string | undefined>): void => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  apply(vars);
  try {
    return load();
  } finally {
    apply(before);
  }
}

/** What an addon linked against OpenBLAS lets pbrl read and change of it. */
export interface BlasControl {
  cpuFeatures(): CpuFeatures;
  blasCores(): string[];
  setBlasCore(name: string): string;
  currentCore(): string;
}

/** The {@link BlasControl} of an addon with these three functions; `currentCore` reads its kernel family in use. */
export function addonBlasControl(addon: Pick<BlasControl, "cpuFeatures" | "blasCores" | "setBlasCore">, currentCore: () => string): BlasControl {
  return { cpuFeatures: () => addon.cpuFeatures(), blasCores: () => addon.blasCores(), setBlasCore: (n) => addon.setBlasCore(n), currentCore };
}

/**
 * Checks the kernel family OpenBLAS loaded with against the CPU's instruction sets and switches
 * it when it is older (see {@link chooseBlasCore}); `override` is PBRL_BLAS_CORETYPE, applied at
 * load. Returns why the family in use runs, for the backend line.
 */
export function chooseAndApplyBlasCore(blas: BlasControl, override: string | undefined): string {
  const choice = chooseBlasCore({ features: blas.cpuFeatures(), detected: blas.currentCore(), available: blas.blasCores(), override });
  if (choice.switchTo === undefined) return choice.reason;
  const now = blas.setBlasCore(choice.switchTo);
  return now === choice.switchTo ? choice.reason : `${choice.switchTo} was chosen but OpenBLAS kept ${now}`;
}

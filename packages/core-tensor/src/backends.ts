/**
 * pbrl's table of tensor backends: for each, its traits (what the rule in backend-rule.ts reads),
 * how to load what it needs (an addon, a package) and how to register it with tfjs. A backend is
 * added by adding its row here.
 */
import { createRequire } from "node:module";
import { tf } from "./tf.js";
import "@tensorflow/tfjs-backend-cpu";
import "@tensorflow/tfjs-backend-wasm";
import { NATIVE_INSTALL_HINT } from "./addon-hints.js";
import type { BackendName, BackendOption, BackendTraits } from "./backend-rule.js";
import { BackendUnavailableError } from "./backend-rule.js";
import { LIBTORCH_INSTALL_HINT, loadLibtorchAddon } from "./libtorch/addon.js";
import { registerLibtorchBackend } from "./libtorch/register.js";
import { WASM_HEAP_MAX_BYTES } from "./memory-capacity.js";
import { loadNativeAddon, nativeThreads, registerNativeBackend } from "./native-backend.js";

/** A registered backend, about to become the active one. */
export interface RegisteredBackend {
  /** The device string pbrl uses for it in configs and logs ("cpu", "gpu" for tfjs-node-gpu). */
  device: string;
  /** What its description line says after its name, e.g. " (WebAssembly SIMD, single-threaded)". */
  detail: string;
  /** Runs once tfjs has made it the active backend. */
  activated?: () => void;
}

export type BackendLoad =
  | { ok: true; register: () => Promise<RegisteredBackend> }
  /** `message`: the error for a run that asked for it by name; `why`: the phrase "auto" gives for passing it over. */
  | { ok: false; message: string; why: string };

export interface BackendEntry {
  name: BackendName;
  traits: BackendTraits;
  /** Loads what it needs (checked on every call, so PBRL_NATIVE=off or a bad addon path always shows); nothing is registered yet. */
  load(): BackendLoad;
}

const TF_NODE_PACKAGES = ["@tensorflow/tfjs-node-gpu", "@tensorflow/tfjs-node"] as const;

/**
 * Finds an installed TensorFlow native binding. Resolution only: nothing is loaded unless found,
 * so a machine without the bindings never pays for the attempt.
 */
function findTfNodePackage(): string | undefined {
  const require = createRequire(import.meta.url);
  for (const pkg of TF_NODE_PACKAGES) {
    try {
      require.resolve(pkg);
      return pkg;
    } catch {
      // not installed; try the next one
    }
  }
  return undefined;
}

/** Why an addon backend cannot run: the error for a run that named it, and the phrase "auto" gives when passing it over. */
function addonMissing(
  name: BackendName,
  load: { reason: string; disabled?: boolean },
  o: { disableVar: string; hint: string; hintInWhy: boolean; instead: string },
): BackendLoad {
  const disabled = load.disabled === true;
  return {
    ok: false,
    why: disabled ? `${name} backend ${load.reason}` : `${name} backend unavailable: ${load.reason}${o.hintInWhy ? `; ${o.hint}` : ""}`,
    message: `backend=${name} is unavailable: ${load.reason}${disabled ? `; unset ${o.disableVar} to use it` : `; ${o.hint}`}. Or choose ${o.instead}.`,
  };
}

const plain = (detail: string, activated?: () => void): BackendLoad => ({
  ok: true,
  register: () => Promise.resolve(activated === undefined ? { device: "cpu", detail } : { device: "cpu", detail, activated }),
});

const HEAP = { maxHeapBytes: WASM_HEAP_MAX_BYTES, bf16: false, devices: ["cpu"] } as const;

/** In BACKEND_NAMES' order; "auto" prefers by `autoRank`. */
export const BACKENDS: readonly BackendEntry[] = [
  {
    name: "wasm",
    traits: { ...HEAP, nativeThreads: false, autoRank: 1 },
    load: () => plain(" (WebAssembly SIMD, single-threaded)"),
  },
  {
    name: "cpu",
    traits: { ...HEAP, maxHeapBytes: undefined, nativeThreads: false, autoRank: undefined },
    // The cpu backend greets its first write in Node with a banner recommending tfjs-node; pbrl's
    // own line says which backend runs, so the banner is suppressed.
    load: () =>
      plain(" (pure JavaScript kernels; slow, for reference)", () => {
        (tf.backend() as { firstUse?: boolean }).firstUse = false;
      }),
  },
  {
    name: "tensorflow",
    traits: { maxHeapBytes: undefined, bf16: false, devices: ["cpu", "gpu"], nativeThreads: true, autoRank: undefined },
    load: () => {
      const pkg = findTfNodePackage();
      if (pkg === undefined) {
        return {
          ok: false,
          why: "tensorflow backend unavailable: neither @tensorflow/tfjs-node nor @tensorflow/tfjs-node-gpu is installed",
          message:
            "backend=tensorflow needs @tensorflow/tfjs-node (CPU) or @tensorflow/tfjs-node-gpu (CUDA), " +
            "and neither is installed. Install one next to pbrl, e.g. `pnpm add @tensorflow/tfjs-node@4.22.0`, " +
            "or choose backend=wasm (default) or backend=cpu.",
        };
      }
      return {
        ok: true,
        register: async () => {
          await import(pkg);
          if (tf.findBackend("tensorflow") === undefined) {
            throw new BackendUnavailableError(
              `${pkg} loaded but registered no "tensorflow" backend with pbrl's @tensorflow/tfjs-core ` +
                `${tf.version_core}; install ${pkg} at the same version (4.22.0).`,
            );
          }
          return { device: pkg.endsWith("-gpu") ? "gpu" : "cpu", detail: ` via ${pkg}` };
        },
      };
    },
  },
  {
    name: "native",
    traits: { ...HEAP, nativeThreads: true, autoRank: 0 },
    load: () => {
      const load = loadNativeAddon();
      if (!load.ok)
        return addonMissing("native", load, {
          disableVar: "PBRL_NATIVE",
          hint: NATIVE_INSTALL_HINT,
          hintInWhy: true,
          instead: "backend=wasm (pure WebAssembly, no install)",
        });
      return {
        ok: true,
        register: () => {
          registerNativeBackend(load.addon);
          const t = load.info.blasThreads;
          const ignored =
            load.ignoredCoreType === undefined ? "" : `; OPENBLAS_CORETYPE=${load.ignoredCoreType} is not applied, set PBRL_BLAS_CORETYPE to choose`;
          const detail = ` (OpenBLAS sgemm, ${load.info.blasCore} kernels: ${load.blasCoreReason}; ${t} thread${t === 1 ? "" : "s"}, on the wasm heap${ignored})`;
          return Promise.resolve({ device: "cpu", detail });
        },
      };
    },
  },
  {
    name: "libtorch",
    traits: { maxHeapBytes: undefined, bf16: true, devices: "any", nativeThreads: true, autoRank: 2 },
    load: () => {
      const load = loadLibtorchAddon(nativeThreads());
      if (!load.ok)
        return addonMissing("libtorch", load, {
          disableVar: "PBRL_LIBTORCH",
          hint: LIBTORCH_INSTALL_HINT,
          hintInWhy: false,
          instead: "backend=native or backend=wasm",
        });
      return {
        ok: true,
        register: () => {
          registerLibtorchBackend(load.addon);
          const i = load.info;
          const cuda = i.cudaDevices > 0 ? `, CUDA with ${i.cudaDevices} device${i.cudaDevices === 1 ? "" : "s"}` : "";
          const detail = ` (libtorch ${i.torchVersion}, ATen ${i.cpuCapability} CPU kernels${i.mkl ? " with MKL" : ""}${i.mkldnn ? " and oneDNN" : ""}, float32 CPU products: ${load.gemm.reason}, bf16 CPU products: ${load.addon.bf16Gemm() === "bfloat16" ? "bfloat16 GEMMs" : "float32 GEMMs over bfloat16 operands (no AVX512-BF16 or AMX)"}; ${i.threads} thread${i.threads === 1 ? "" : "s"}${cuda})`;
          return Promise.resolve({ device: "cpu", detail });
        },
      };
    },
  },
];

/** The table's row for `name`. */
export function backendEntry(name: BackendName): BackendEntry {
  return BACKENDS.find((b) => b.name === name)!;
}

/** The table as the rule reads it: availability is whether `load` succeeds. */
export function backendOptions(table: readonly BackendEntry[] = BACKENDS): BackendOption[] {
  return table.map((b) => ({
    name: b.name,
    traits: b.traits,
    available: () => {
      const load = b.load();
      return load.ok ? { ok: true } : { ok: false, why: load.why };
    },
  }));
}

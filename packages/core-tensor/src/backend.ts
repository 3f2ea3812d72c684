import { createRequire } from "node:module";
import { tf } from "./tf.js";
import "@tensorflow/tfjs-backend-cpu";
import "@tensorflow/tfjs-backend-wasm";
import { NATIVE_INSTALL_HINT } from "./addon-hints.js";
import { installLeanGradients } from "./lean-gradients.js";
import { LIBTORCH_INSTALL_HINT, loadLibtorchAddon } from "./libtorch/addon.js";
import { LIBTORCH_BACKEND_NAME, registerLibtorchBackend } from "./libtorch/register.js";
import { loadNativeAddon, NATIVE_BACKEND_NAME, nativeThreads, registerNativeBackend } from "./native-backend.js";

// Every backend computes gradients with pbrl's lean walk of tfjs's tape (lean-gradients.ts).
installLeanGradients();

export type BackendName = "wasm" | "cpu" | "tensorflow" | "native" | "libtorch";
export const BACKEND_NAMES: readonly BackendName[] = ["wasm", "cpu", "tensorflow", "native", "libtorch"];

export interface BackendInfo {
  /** The backend pbrl asked for. */
  name: BackendName;
  /** The device string pbrl uses for this backend in configs and logs ("cpu", "gpu" for tfjs-node-gpu). */
  device: string;
  /** A one-line human description, printed once by the CLI so users know which path runs. */
  description: string;
}

export class BackendUnavailableError extends Error {
  override name = "BackendUnavailableError";
}

const TF_NODE_PACKAGES = ["@tensorflow/tfjs-node-gpu", "@tensorflow/tfjs-node"] as const;

let current: BackendInfo | undefined;

/** Parses a user-supplied backend name, with an error that lists what is accepted. */
export function parseBackendName(value: string): BackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(value)) return value as BackendName;
  throw new BackendUnavailableError(`backend: unknown value ${JSON.stringify(value)}; expected one of ${BACKEND_NAMES.join(", ")}`);
}

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

/**
 * Selects and initialises the tensor backend. `wasm` needs no native install and trains with
 * SIMD kernels; `native` is wasm with its heavy kernels (matrix products through OpenBLAS,
 * transposes, slices, concatenation, sums, exp and a few other unary ops) in pbrl's C++ addon,
 * when that is built (docs/native-backend.md); `cpu` is the pure-JS reference;
 * `tensorflow` uses libtensorflow through `@tensorflow/tfjs-node(-gpu)` when the user has
 * installed it. Asking for a backend that is unavailable throws a {@link BackendUnavailableError}
 * that says how to install it. {@link useDefaultBackend} picks `native` when it can, else `wasm`.
 */
export async function useBackend(name: BackendName = "wasm"): Promise<BackendInfo> {
  let device = "cpu";
  let detail = "";
  if (name === NATIVE_BACKEND_NAME) {
    // Checked on every call, so PBRL_NATIVE=off or a bad PBRL_NATIVE_ADDON always gives the error.
    const load = loadNativeAddon();
    if (!load.ok) {
      throw new BackendUnavailableError(
        `backend=native is unavailable: ${load.reason}` +
          (load.disabled ? "; unset PBRL_NATIVE to use it" : `; ${NATIVE_INSTALL_HINT}`) +
          ". Or choose backend=wasm (pure WebAssembly, no install).",
      );
    }
    if (current?.name === name && tf.getBackend() === name) return current;
    registerNativeBackend(load.addon);
    const t = load.info.blasThreads;
    const ignored = load.ignoredCoreType === undefined ? "" : `; OPENBLAS_CORETYPE=${load.ignoredCoreType} is not applied, set PBRL_BLAS_CORETYPE to choose`;
    detail = ` (OpenBLAS sgemm, ${load.info.blasCore} kernels: ${load.blasCoreReason}; ${t} thread${t === 1 ? "" : "s"}, on the wasm heap${ignored})`;
  }
  if (name === LIBTORCH_BACKEND_NAME) {
    const load = loadLibtorchAddon(nativeThreads());
    if (!load.ok) {
      throw new BackendUnavailableError(
        `backend=libtorch is unavailable: ${load.reason}` +
          (load.disabled ? "; unset PBRL_LIBTORCH to use it" : `; ${LIBTORCH_INSTALL_HINT}`) +
          ". Or choose backend=native or backend=wasm.",
      );
    }
    if (current?.name === name && tf.getBackend() === name) return current;
    registerLibtorchBackend(load.addon);
    const i = load.info;
    const cuda = i.cudaDevices > 0 ? `, CUDA with ${i.cudaDevices} device${i.cudaDevices === 1 ? "" : "s"}` : "";
    detail = ` (libtorch ${i.torchVersion}, ATen ${i.cpuCapability} CPU kernels${i.mkl ? " with MKL" : ""}${i.mkldnn ? " and oneDNN" : ""}, float32 CPU products: ${load.gemm.reason}; ${i.threads} thread${i.threads === 1 ? "" : "s"}${cuda})`;
  }
  if (current?.name === name && tf.getBackend() === name) return current;
  if (name === "tensorflow") {
    const pkg = findTfNodePackage();
    if (pkg === undefined) {
      throw new BackendUnavailableError(
        "backend=tensorflow needs @tensorflow/tfjs-node (CPU) or @tensorflow/tfjs-node-gpu (CUDA), " +
          "and neither is installed. Install one next to pbrl, e.g. `pnpm add @tensorflow/tfjs-node@4.22.0`, " +
          "or choose backend=wasm (default) or backend=cpu.",
      );
    }
    await import(pkg);
    if (tf.findBackend("tensorflow") === undefined) {
      throw new BackendUnavailableError(
        `${pkg} loaded but registered no "tensorflow" backend with pbrl's @tensorflow/tfjs-core ` +
          `${tf.version_core}; install ${pkg} at the same version (4.22.0).`,
      );
    }
    device = pkg.endsWith("-gpu") ? "gpu" : "cpu";
    detail = ` via ${pkg}`;
  }
  const ok = await tf.setBackend(name);
  if (!ok) throw new BackendUnavailableError(`backend=${name} failed to initialise`);
  await tf.ready();
  if (name === "wasm") detail = " (WebAssembly SIMD, single-threaded)";
  if (name === "cpu") {
    detail = " (pure JavaScript kernels; slow, for reference)";
    // The cpu backend greets its first write in Node with a banner recommending tfjs-node;
    // pbrl's own line above says which backend runs, so the banner is suppressed.
    (tf.backend() as { firstUse?: boolean }).firstUse = false;
  }
  current = { name, device, description: `tensor backend: ${name}${detail}, tfjs ${tf.version_core}` };
  return current;
}

/** The backend selected by `useBackend`, or undefined before the first call. */
export function currentBackend(): BackendInfo | undefined {
  return current;
}

/**
 * The default backend: `PBRL_BACKEND` when set (an error if that backend is unavailable); else
 * `native` when its addon is built and loads, and otherwise `wasm`, whose description then says
 * why native does not run (not built, failed to load, or disabled by `PBRL_NATIVE=off`).
 */
export async function useDefaultBackend(): Promise<BackendInfo> {
  const env = process.env["PBRL_BACKEND"];
  if (env !== undefined && env !== "") return useBackend(parseBackendName(env));
  const load = loadNativeAddon();
  let why: string;
  if (load.ok) {
    try {
      return await useBackend("native");
    } catch (e) {
      why = `native backend failed: ${e instanceof Error ? e.message : String(e)}`;
    }
  } else {
    why = load.disabled ? `native backend ${load.reason}` : `native backend unavailable: ${load.reason}; ${NATIVE_INSTALL_HINT}`;
  }
  const info = await useBackend("wasm");
  current = { ...info, description: `tensor backend: wasm (WebAssembly SIMD, single-threaded; ${why}), tfjs ${tf.version_core}` };
  return current;
}

/**
 * The backend in use, initialising the default on first call (see {@link useDefaultBackend}).
 * Library entry points call this so a user who never picks a backend still gets one.
 */
export async function ensureBackend(): Promise<BackendInfo> {
  return current ?? useDefaultBackend();
}

/** A backend setting as configs spell it: a backend name, or "auto" for {@link useDefaultBackend}. */
export type BackendSetting = BackendName | "auto";

/** Starts the backend a config asks for ("auto": native when built, else wasm; PBRL_BACKEND wins). */
export async function useBackendSetting(setting: BackendSetting): Promise<BackendInfo> {
  return setting === "auto" ? useDefaultBackend() : useBackend(setting);
}

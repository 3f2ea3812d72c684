import { tf } from "./tf.js";
import { chooseBackend, type BackendChoice, type BackendName, type BackendNeeds, type BackendOption, type BackendSetting } from "./backend-rule.js";
import { BackendUnavailableError } from "./backend-rule.js";
import { backendEntry, backendOptions } from "./backends.js";
import { installLeanGradients } from "./lean-gradients.js";

export { BACKEND_NAMES, BackendUnavailableError, chooseBackend, parseBackendName } from "./backend-rule.js";
export type {
  BackendAvailability,
  BackendChoice,
  BackendName,
  BackendNeeds,
  BackendOption,
  BackendRequest,
  BackendSetting,
  BackendTraits,
} from "./backend-rule.js";

// Every backend computes gradients with pbrl's lean walk of tfjs's tape (lean-gradients.ts).
installLeanGradients();

export interface BackendInfo {
  /** The backend pbrl asked for. */
  name: BackendName;
  /** The device string pbrl uses for this backend in configs and logs ("cpu", "gpu" for tfjs-node-gpu). */
  device: string;
  /** A one-line human description, printed once by the CLI so users know which path runs. */
  description: string;
}

let current: BackendInfo | undefined;

/**
 * Selects and initialises the tensor backend. `wasm` needs no native install and trains with
 * SIMD kernels; `native` is wasm with its heavy kernels (matrix products through OpenBLAS,
 * transposes, slices, concatenation, sums, exp and a few other unary ops) in pbrl's C++ addon,
 * when that is built (docs/native-backend.md); `cpu` is the pure-JS reference;
 * `tensorflow` uses libtensorflow through `@tensorflow/tfjs-node(-gpu)` when the user has
 * installed it; `libtorch` is ATen through pbrl's libtorch addon (docs/libtorch-backend.md).
 * Asking for a backend that is unavailable throws a {@link BackendUnavailableError} that says how
 * to install it. {@link useBackendSetting} with "auto" lets the backend rule choose.
 */
export async function useBackend(name: BackendName = "wasm"): Promise<BackendInfo> {
  const load = backendEntry(name).load();
  if (!load.ok) throw new BackendUnavailableError(load.message);
  if (current?.name === name && tf.getBackend() === name) return current;
  const registered = await load.register();
  const ok = await tf.setBackend(name);
  if (!ok) throw new BackendUnavailableError(`backend=${name} failed to initialise`);
  await tf.ready();
  registered.activated?.();
  current = { name, device: registered.device, description: `tensor backend: ${name}${registered.detail}, tfjs ${tf.version_core}` };
  return current;
}

/** The backend selected by `useBackend`, or undefined before the first call. */
export function currentBackend(): BackendInfo | undefined {
  return current;
}

/**
 * The backend rule ({@link chooseBackend}) applied here: pbrl's backend table, this process's
 * PBRL_BACKEND, and the run's needs. The only place PBRL_BACKEND is read.
 */
export function decideBackend(setting: BackendSetting, needs: BackendNeeds = {}, table: readonly BackendOption[] = backendOptions()): BackendChoice {
  return chooseBackend({ setting, env: process.env["PBRL_BACKEND"], needs }, table);
}

/**
 * Starts the backend a setting asks for: a name as given, "auto" as the backend rule decides for
 * the run's needs (PBRL_BACKEND when set; else native when built, else wasm, with libtorch, when
 * built, for bf16, devices other than the CPU and runs that outgrow the 4 GB heap). An automatic
 * choice that fails to start is passed over and the rule asked again. When "auto" passes over a
 * backend it prefers, wasm's description says why (native not built, failed to load, disabled).
 */
export async function useBackendSetting(setting: BackendSetting, needs: BackendNeeds = {}): Promise<BackendInfo> {
  let table = backendOptions();
  for (;;) {
    const choice = decideBackend(setting, needs, table);
    let info: BackendInfo;
    try {
      info = await useBackend(choice.name);
    } catch (e) {
      if (choice.by !== "auto") throw e;
      const why = `${choice.name} backend failed: ${e instanceof Error ? e.message : String(e)}`;
      table = table.map((o) => (o.name === choice.name ? { ...o, available: () => ({ ok: false, why }) } : o));
      continue;
    }
    if (info.name !== "wasm" || choice.passedOver.length === 0) return info;
    current = { ...info, description: `tensor backend: wasm (WebAssembly SIMD, single-threaded; ${choice.passedOver.join("; ")}), tfjs ${tf.version_core}` };
    return current;
  }
}

/** The default backend: "auto" with no needs (see {@link useBackendSetting}). */
export async function useDefaultBackend(): Promise<BackendInfo> {
  return useBackendSetting("auto");
}

/**
 * The backend in use, initialising the default on first call (see {@link useDefaultBackend}).
 * Library entry points call this so a user who never picks a backend still gets one.
 */
export async function ensureBackend(): Promise<BackendInfo> {
  return current ?? useDefaultBackend();
}

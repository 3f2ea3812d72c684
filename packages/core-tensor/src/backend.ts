import { createRequire } from "node:module";
import { tf } from "./tf.js";
import "@tensorflow/tfjs-backend-cpu";
import "@tensorflow/tfjs-backend-wasm";

export type BackendName = "wasm" | "cpu" | "tensorflow";
export const BACKEND_NAMES: readonly BackendName[] = ["wasm", "cpu", "tensorflow"];

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
  throw new BackendUnavailableError(
    `backend: unknown value ${JSON.stringify(value)}; expected one of ${BACKEND_NAMES.join(", ")}`,
  );
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
 * Selects and initialises the tensor backend. `wasm` is the default: it needs no native
 * install and trains with SIMD kernels; `cpu` is the pure-JS reference; `tensorflow` uses
 * libtensorflow through `@tensorflow/tfjs-node(-gpu)` when the user has installed it.
 */
export async function useBackend(name: BackendName = "wasm"): Promise<BackendInfo> {
  if (current?.name === name && tf.getBackend() === name) return current;
  let device = "cpu";
  let detail = "";
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
 * The backend in use, initialising the default on first call: `PBRL_BACKEND` when set, else
 * `wasm`. Library entry points call this so a user who never picks a backend still gets one.
 */
export async function ensureBackend(): Promise<BackendInfo> {
  return current ?? useBackend(parseBackendName(process.env["PBRL_BACKEND"] ?? "wasm"));
}

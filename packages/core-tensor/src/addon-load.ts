/**
 * Loading one of pbrl's N-API addons (native/loader.ts, libtorch/addon.ts) once per path: the
 * switch that pretends it is absent, the check that it is built, the check that it has every
 * function pbrl calls, and the cache. What is particular to an addon (how it is required, with
 * which environment, and how it is initialised) is the caller's.
 */
import { existsSync } from "node:fs";
import { REBUILD_ADDON_HINT } from "./addon-hints.js";

/** Why an addon cannot be used; `disabled` when its switch is off rather than the addon missing or broken. */
export interface AddonFailure {
  ok: false;
  reason: string;
  disabled: boolean;
}

export interface AddonLoadSpec<A, S> {
  /** How messages name the addon, e.g. "native addon". */
  name: string;
  /** The environment variable that, set to "off", pretends the addon is absent, e.g. "PBRL_NATIVE". */
  switchVar: string;
  /** The addon path in effect. */
  path: () => string;
  /** The outcome per path, kept by the caller. */
  cache: Map<string, S | AddonFailure>;
  /** Every function pbrl calls, checked after `require`: an addon built from older sources lacks newer ones. */
  required: readonly (keyof A & string)[];
  /** Requires the addon file (with the environment its libraries read as they load). */
  require: (path: string) => A;
  /** Initialises an addon that has every required function; the outcome to cache. */
  init: (addon: A, path: string) => S;
}

/**
 * Loads an addon, or says why it cannot: disabled by `<switchVar>=off`, not built (the file is
 * missing), or failing to load (a missing function, or `require` or `init` throwing). Never throws;
 * the outcome is cached per path.
 */
export function loadAddonOnce<A, S>(spec: AddonLoadSpec<A, S>): S | AddonFailure {
  if (process.env[spec.switchVar] === "off") return { ok: false, reason: `disabled by ${spec.switchVar}=off`, disabled: true };
  const path = spec.path();
  const cached = spec.cache.get(path);
  if (cached !== undefined) return cached;
  let result: S | AddonFailure;
  if (!existsSync(path)) {
    result = { ok: false, reason: `${spec.name} not built (${path} does not exist)`, disabled: false };
  } else {
    try {
      const addon = spec.require(path);
      // Refuse an addon built from older sources (pnpm install skipped, or sources pulled since)
      // here rather than fail in the middle of a kernel.
      const missing = spec.required.filter((f) => typeof (addon as unknown as Record<string, unknown>)[f] !== "function");
      if (missing.length > 0) throw new Error(`it is out of date (no ${missing.join(", ")}); ${REBUILD_ADDON_HINT}`);
      result = spec.init(addon, path);
    } catch (e) {
      const msg = (e instanceof Error ? e.message : String(e)).split("\n")[0];
      result = { ok: false, reason: `${spec.name} ${path} failed to load: ${msg}`, disabled: false };
    }
  }
  spec.cache.set(path, result);
  return result;
}

/**
 * Whether this installation can form process groups: they run on PyTorch's c10d inside pbrl's
 * libtorch addon, so they need that addon (built against a libtorch with c10d, as every torch
 * wheel from pytorch.org is), whichever tensor backend computes.
 */
import { REBUILD_ADDON_HINT } from "../addon-hints.js";
import { LIBTORCH_INSTALL_HINT, loadLibtorchAddon } from "../libtorch/addon.js";
import { nativeThreads } from "../native/loader.js";
import { missingDistributedFunctions, type DistributedAddon } from "./addon-functions.js";

export type DistributedAvailability = { ok: true } | { ok: false; reason: string };

/** Process groups cannot be formed here; the message says why and how to get them. */
export class DistributedUnavailableError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "DistributedUnavailableError";
  }
}

function load(): { ok: true; addon: DistributedAddon } | { ok: false; reason: string } {
  const lib = loadLibtorchAddon(nativeThreads());
  const need = "process groups (distributed training) run on PyTorch's c10d inside pbrl's libtorch addon";
  if (!lib.ok) {
    return { ok: false, reason: lib.disabled ? `${need}, which is ${lib.reason}` : `${need}, which is unavailable (${lib.reason}): ${LIBTORCH_INSTALL_HINT}` };
  }
  const missing = missingDistributedFunctions(lib.addon);
  if (missing.length > 0) return { ok: false, reason: `${need}; the addon at ${lib.path} predates them (no ${missing.join(", ")}): ${REBUILD_ADDON_HINT}` };
  const addon = lib.addon as DistributedAddon;
  if (!addon.distAvailable()) {
    return {
      ok: false,
      reason: `${need}; the libtorch the addon was built against has no c10d (a build without USE_DISTRIBUTED): use a torch wheel from pytorch.org, then ${REBUILD_ADDON_HINT}`,
    };
  }
  return { ok: true, addon };
}

/** Whether process groups can be formed, or why not (for config validation; never throws). */
export function distributedAvailable(): DistributedAvailability {
  const l = load();
  return l.ok ? { ok: true } : { ok: false, reason: l.reason };
}

/** The addon with its process-group functions; throws a {@link DistributedUnavailableError} saying how to get them. */
export function distributedAddon(): DistributedAddon {
  const l = load();
  if (!l.ok) throw new DistributedUnavailableError(l.reason);
  return l.addon;
}

/**
 * The one rule that decides which tensor backend runs: a pure function of the request (a backend
 * name, or "auto"), PBRL_BACKEND's value and what the run needs, over a table of backends with
 * their traits and whether each can run here (src/backends.ts holds pbrl's table). Configs, the
 * trainers and the CLI all ask it; nothing else decides.
 */
export type BackendName = "wasm" | "cpu" | "tensorflow" | "native" | "libtorch";
export const BACKEND_NAMES: readonly BackendName[] = ["wasm", "cpu", "tensorflow", "native", "libtorch"];

/** A backend setting as configs spell it: a backend name, or "auto" for the rule's choice. */
export type BackendSetting = BackendName | "auto";

export class BackendUnavailableError extends Error {
  override name = "BackendUnavailableError";
}

/** Parses a user-supplied backend name, with an error that lists what is accepted. */
export function parseBackendName(value: string): BackendName {
  if ((BACKEND_NAMES as readonly string[]).includes(value)) return value as BackendName;
  throw new BackendUnavailableError(`backend: unknown value ${JSON.stringify(value)}; expected one of ${BACKEND_NAMES.join(", ")}`);
}

/** What a backend can give, as far as the rule needs to know. */
export interface BackendTraits {
  /** The most tensor memory its own heap holds (wasm's 32-bit address space), or undefined: host memory bounds it. */
  maxHeapBytes: number | undefined;
  /** Whether it computes matrix products and attention in bfloat16. */
  bf16: boolean;
  /** The device names it can place models on, or "any" when the backend checks names itself (libtorch: cpu, cuda:N). */
  devices: readonly string[] | "any";
  /** Whether its heavy kernels run on native threads (OpenBLAS, ATen) rather than one wasm or JS thread. */
  nativeThreads: boolean;
  /** Its place in "auto"'s order of preference (lower first), or undefined when "auto" never picks it. */
  autoRank: number | undefined;
}

export type BackendAvailability = { ok: true } | { ok: false; why: string };

/** One row of a backend table as the rule reads it; `available` is asked only when the rule needs the answer. */
export interface BackendOption {
  name: BackendName;
  traits: BackendTraits;
  available(): BackendAvailability;
}

/** What a run asks of its backend. */
export interface BackendNeeds {
  /** bfloat16 matrix products (the `bf16` config field). */
  bf16?: boolean;
  /** The devices its models go on ("auto" and "cpu" every backend gives). */
  devices?: readonly string[];
  /**
   * The run was found not to fit this backend's tensor memory (its memory check threw a
   * MemoryBudgetError before allocating), needing about `bytes` when the check could tell.
   */
  outgrew?: { backend: BackendName; bytes?: number | undefined };
}

export interface BackendRequest {
  setting: BackendSetting;
  /** PBRL_BACKEND's value ("" or undefined: unset); it decides for "auto". */
  env?: string | undefined;
  needs?: BackendNeeds;
}

export interface BackendChoice {
  name: BackendName;
  /** What decided: the setting (a name), PBRL_BACKEND, or the "auto" rule itself. */
  by: "setting" | "env" | "auto";
  /** Why this backend: the setting, PBRL_BACKEND, or the needs and unavailable backends that led "auto" here. */
  reason: string;
  /** For "auto": why each backend it prefers to this one does not run here (empty when none). */
  passedOver: string[];
}

/** The need `traits` cannot meet, as a phrase for the reason, or undefined when it meets them all. */
function unmetNeed(traits: BackendTraits, needs: BackendNeeds, table: readonly BackendOption[]): string | undefined {
  if (needs.bf16 === true && !traits.bf16) return "bf16";
  const devices = traits.devices;
  const device = devices === "any" ? undefined : needs.devices?.find((d) => d !== "auto" && !devices.includes(d));
  if (device !== undefined) return `device ${device}`;
  const outgrew = needs.outgrew;
  if (outgrew !== undefined && traits.maxHeapBytes !== undefined) {
    const bound = table.find((o) => o.name === outgrew.backend)?.traits.maxHeapBytes;
    if (bound !== undefined && traits.maxHeapBytes <= bound) {
      const need = outgrew.bytes === undefined ? "" : ` (it needs about ${(outgrew.bytes / 2 ** 30).toFixed(2)} GB)`;
      return `the run does not fit the ${outgrew.backend} backend's tensor memory${need}`;
    }
  }
  return undefined;
}

/**
 * The backend to use and why. A backend name is used as given (starting it says what is missing
 * if it cannot run). "auto" is PBRL_BACKEND when set; otherwise the first backend in "auto"'s order
 * (native, wasm, libtorch) that meets the needs and is available here — so libtorch runs what only
 * it gives (bf16, devices other than the CPU, runs that outgrow the 4 GB heap) and nothing before.
 * When no backend here meets the needs, a run that outgrew its backend stays there (its memory
 * error stands), and any other run gets the first available backend, whose checks then name what
 * it lacks. `available` is called only for backends the answer depends on, in that order.
 */
export function chooseBackend(request: BackendRequest, table: readonly BackendOption[]): BackendChoice {
  if (request.setting !== "auto") return { name: request.setting, by: "setting", reason: `backend=${request.setting}`, passedOver: [] };
  if (request.env !== undefined && request.env !== "")
    return { name: parseBackendName(request.env), by: "env", reason: `PBRL_BACKEND=${request.env}`, passedOver: [] };
  const needs = request.needs ?? {};
  const ranked = table.filter((o) => o.traits.autoRank !== undefined).sort((a, b) => a.traits.autoRank! - b.traits.autoRank!);
  const known = new Map<BackendName, BackendAvailability>();
  const availability = (o: BackendOption): BackendAvailability => known.get(o.name) ?? known.set(o.name, o.available()).get(o.name)!;
  const unmet: string[] = [];
  const passedOver: string[] = [];
  for (const o of ranked) {
    const missing = unmetNeed(o.traits, needs, table);
    if (missing !== undefined) {
      if (!unmet.includes(missing)) unmet.push(missing);
      continue;
    }
    const a = availability(o);
    if (a.ok) return { name: o.name, by: "auto", reason: [...unmet, ...passedOver].join("; ") || `${o.name}: auto's first choice`, passedOver };
    passedOver.push(a.why);
  }
  const lacking = `no backend here gives ${unmet.join(", ")}${passedOver.length > 0 ? ` (${passedOver.join("; ")})` : ""}`;
  if (needs.outgrew !== undefined) return { name: needs.outgrew.backend, by: "auto", reason: lacking, passedOver: [] };
  const skipped: string[] = [];
  for (const o of ranked) {
    const a = availability(o);
    if (a.ok)
      return { name: o.name, by: "auto", reason: `${lacking}; ${o.name} runs${skipped.length > 0 ? ` (${skipped.join("; ")})` : ""}`, passedOver: skipped };
    skipped.push(a.why);
  }
  throw new BackendUnavailableError(`backend=auto: no backend is available here (${skipped.join("; ")})`);
}

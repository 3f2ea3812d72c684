/**
 * The retry arithmetic every network caller shares (hub downloads and pushes, the API
 * comparator's transport): exponential backoff, a sleep that an AbortSignal ends, and the code
 * and message of a failed fetch. Each caller keeps its own rule for what is worth retrying.
 */
import { setTimeout as delay } from "node:timers/promises";

export interface Backoff {
  /** The first wait; each further one doubles, up to maxMs. */
  baseMs: number;
  maxMs: number;
}

/**
 * The wait before retry `retryIndex` (0-based): min(maxMs, baseMs·2^retryIndex). With `random`
 * (uniform in [0, 1)), equal jitter: half of that fixed, half drawn, so clients that failed
 * together do not retry together. Never less than `atLeastMs` (a server's Retry-After).
 */
export function backoffMs(retryIndex: number, p: Backoff, random?: () => number, atLeastMs?: number): number {
  const step = Math.min(p.maxMs, p.baseMs * 2 ** retryIndex);
  const wait = random === undefined ? step : step / 2 + random() * (step / 2);
  return Math.max(wait, atLeastMs ?? 0);
}

/** Waits `ms` milliseconds; rejects (or resolves early) when `signal` aborts. */
export type SleepFn = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: SleepFn = async (ms, signal) => {
  await delay(ms, undefined, signal === undefined ? undefined : { signal });
};

/** The innermost error code and message of a fetch failure (undici nests the cause); never the request's headers. */
export function fetchFailure(err: unknown): { code: string | undefined; message: string } {
  let code: string | undefined;
  let message = err instanceof Error ? err.message : String(err);
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    const c = (e as { code?: unknown }).code;
    if (typeof c === "string") code = c;
    if (e !== err && e.message !== "") message = e.message;
    e = (e as { cause?: unknown }).cause;
  }
  return { code, message };
}

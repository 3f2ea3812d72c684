/**
 * One JSON POST with a per-attempt timeout and retries: 429, 408 and 5xx responses, timeouts and
 * connection failures are retried with exponential backoff and equal jitter, waiting at least
 * what Retry-After (or retry-after-ms) asks; any other status, a redirect, or a body over the
 * size limit fails at once. The final error names the format, the display URL, the status or
 * error kind, the attempts and the start of the body, with the key scrubbed.
 *
 * Bodies are read as a stream and never past maxResponseBytes: a server that answers with an
 * endless or huge body costs at most that much memory before the request is aborted.
 */
import { backoffMs, fetchFailure, sleep, type SleepFn } from "@pbrl/models";
import { ApiCallCancelled, ApiComparatorError, ApiResponseTooLargeError, snippet } from "./errors.js";

// Equal-jittered (the random source is the run's seeded stream), never less than Retry-After.
export { backoffMs, type SleepFn } from "@pbrl/models";
export const defaultSleep: SleepFn = sleep;

/** Reported before each retry; carries no credentials. */
export interface ApiRetryEvent {
  format: string;
  /** The display URL. */
  url: string;
  /** The attempt that failed (1-based). */
  attempt: number;
  maxRetries: number;
  /** e.g. "HTTP 429", "timed out after 120 s", "connection error (ECONNRESET: …)". */
  reason: string;
  /** How long the comparator waits before the next attempt. */
  delayMs: number;
}

export interface RetryPolicy {
  maxRetries: number;
  /** Backoff before retry r (0-based) is min(maxMs, baseMs·2^r), equal-jittered, at least Retry-After. */
  baseMs: number;
  maxMs: number;
  /** A Retry-After longer than this fails at once instead of waiting. */
  maxRetryAfterMs: number;
}

export interface PostJsonOptions {
  format: string;
  url: string;
  displayUrl: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  retry: RetryPolicy;
  /** Uniform [0, 1) for jitter. */
  random: () => number;
  sleep: SleepFn;
  redact: (text: string) => string;
  /** Aborts the call (another request of the same sample() failed): rejects with ApiCallCancelled. */
  signal?: AbortSignal;
  onRetry?: ((e: ApiRetryEvent) => void) | undefined;
  /** Counts every HTTP attempt and every retry. */
  counters?: { requests: number; retries: number };
  /** Largest body read (decoded bytes); a larger 2xx body fails with ApiResponseTooLargeError. */
  maxResponseBytes: number;
}

export interface PostJsonResult {
  /** The 2xx body as text (parsed by the format, which knows what it should hold). */
  text: string;
  status: number;
  attempts: number;
}

interface TooLarge {
  receivedBytes: number;
  declared: boolean;
}

type Attempt =
  | { ok: true; text: string; status: number }
  | { ok: false; retryable: boolean; kind: string; status?: number; detail?: string; retryAfterMs?: number; tooLarge?: TooLarge };

/** Error bodies are only quoted (300 characters), so far less than a completion's limit is read of them. */
const ERROR_BODY_BYTES = 64 * 1024;

/** Network error codes that no retry can fix. */
const PERMANENT_NETWORK_CODES = new Set([
  "ENOTFOUND",
  "ERR_INVALID_URL",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "ERR_SSL_WRONG_VERSION_NUMBER",
]);

export async function postJson(o: PostJsonOptions): Promise<PostJsonResult> {
  const bodyText = JSON.stringify(o.body);
  for (let attempt = 1; ; attempt++) {
    if (aborted(o.signal)) throw new ApiCallCancelled();
    if (o.counters !== undefined) o.counters.requests += 1;
    const a = await attemptOnce(o, bodyText);
    if (a.ok) return { text: a.text, status: a.status, attempts: attempt };
    if (a.tooLarge !== undefined) {
      throw new ApiResponseTooLargeError({
        format: o.format,
        url: o.displayUrl,
        status: a.status,
        attempts: attempt,
        limitBytes: o.maxResponseBytes,
        ...a.tooLarge,
      });
    }
    const fail = (kind: string): never => {
      throw new ApiComparatorError({ format: o.format, url: o.displayUrl, kind, status: a.status, attempts: attempt, detail: a.detail });
    };
    if (!a.retryable || attempt > o.retry.maxRetries) fail(a.kind);
    if (a.retryAfterMs !== undefined && a.retryAfterMs > o.retry.maxRetryAfterMs) {
      fail(
        `${a.kind} (Retry-After of ${(a.retryAfterMs / 1000).toFixed(0)} s exceeds the ${(o.retry.maxRetryAfterMs / 1000).toFixed(0)} s the comparator waits at most)`,
      );
    }
    const wait = backoffMs(attempt - 1, o.retry, o.random, a.retryAfterMs);
    if (o.counters !== undefined) o.counters.retries += 1;
    o.onRetry?.({ format: o.format, url: o.displayUrl, attempt, maxRetries: o.retry.maxRetries, reason: a.kind, delayMs: wait });
    try {
      await o.sleep(wait, o.signal);
    } catch (err) {
      if (aborted(o.signal)) throw new ApiCallCancelled();
      throw err;
    }
  }
}

/** A function, so that TypeScript does not narrow `aborted` across awaits. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Retry-After in milliseconds: `retry-after-ms`, or `retry-after` as seconds or an HTTP date. */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Number(ms);
  const ra = headers.get("retry-after");
  if (ra === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(ra)) return Number(ra) * 1000;
  const t = Date.parse(ra);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

async function attemptOnce(o: PostJsonOptions, bodyText: string): Promise<Attempt> {
  const ctrl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctrl.abort();
  }, o.timeoutMs);
  const onCancel = (): void => ctrl.abort();
  o.signal?.addEventListener("abort", onCancel, { once: true });
  try {
    // redirect "manual": a redirect is reported, never followed, so the key header cannot travel
    // to another host.
    const res = await fetch(o.url, { method: "POST", headers: o.headers, body: bodyText, signal: ctrl.signal, redirect: "manual" });
    const status = res.status;
    if (status >= 200 && status < 300) {
      const declared = declaredLength(res.headers);
      if (declared !== undefined && declared > o.maxResponseBytes) {
        ctrl.abort(); // the body is never read: closing the connection is cheaper than draining it
        return { ok: false, retryable: false, kind: "response too large", status, tooLarge: { receivedBytes: declared, declared: true } };
      }
      const body = await readCapped(res, o.maxResponseBytes, ctrl);
      // Not retried: an oversized answer means a server that ignores the token limit or streams
      // without end; the same request gets the same answer.
      if (body.over) return { ok: false, retryable: false, kind: "response too large", status, tooLarge: { receivedBytes: body.bytes, declared: false } };
      return { ok: true, text: decodeUtf8(body.chunks), status };
    }
    // Only the start of an error body is quoted, so only that much is read.
    const text = decodeUtf8((await readCapped(res, Math.min(ERROR_BODY_BYTES, o.maxResponseBytes), ctrl)).chunks);
    if (status >= 300 && status < 400) {
      const location = res.headers.get("location");
      const to = location === null ? "" : ` to ${o.redact(location)}`;
      return {
        ok: false,
        retryable: false,
        kind: `HTTP ${status} redirect${to} (not followed; set comparator_api_url to the final address)`,
        status,
        detail: snippet(text, o.redact),
      };
    }
    const retryable = status === 429 || status === 408 || status >= 500;
    return {
      ok: false,
      retryable,
      kind: `HTTP ${status}${hint(status)}`,
      status,
      detail: snippet(text, o.redact),
      retryAfterMs: retryable ? parseRetryAfter(res.headers) : undefined,
    };
  } catch (err) {
    if (timedOut) return { ok: false, retryable: true, kind: `timed out after ${o.timeoutMs / 1000} s` };
    if (aborted(o.signal)) throw new ApiCallCancelled();
    const { code, message } = fetchFailure(err);
    if (code === undefined && !(err instanceof TypeError && err.message === "fetch failed")) {
      // Not a transport failure (e.g. an invalid header value): nothing to retry.
      return { ok: false, retryable: false, kind: `request error (${o.redact(message)})` };
    }
    const retryable = code === undefined || !PERMANENT_NETWORK_CODES.has(code);
    return { ok: false, retryable, kind: `connection error (${code ?? "fetch failed"}: ${o.redact(message)})` };
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", onCancel);
  }
}

/** Content-Length as a number, when the server sent a valid one. */
function declaredLength(headers: Headers): number | undefined {
  const v = headers.get("content-length");
  if (v === null || !/^\s*\d+\s*$/.test(v)) return undefined;
  return Number(v);
}

interface CappedBody {
  /** Whether the body went past the limit (the request was then aborted). */
  over: boolean;
  /** Bytes received, the chunk that crossed the limit included. */
  bytes: number;
  /** What fit under the limit. */
  chunks: Uint8Array[];
}

/**
 * The body, read chunk by chunk until it ends or passes `limit` bytes; past the limit the request
 * is aborted at once, so an endless body holds at most the limit in memory.
 */
async function readCapped(res: Response, limit: number, ctrl: AbortController): Promise<CappedBody> {
  const chunks: Uint8Array[] = [];
  if (res.body === null) return { over: false, bytes: 0, chunks };
  const reader = res.body.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { over: false, bytes, chunks };
    if (bytes + value.byteLength > limit) {
      chunks.push(value.subarray(0, limit - bytes));
      ctrl.abort();
      reader.cancel().catch(() => undefined);
      return { over: true, bytes: bytes + value.byteLength, chunks };
    }
    chunks.push(value);
    bytes += value.byteLength;
  }
}

/** As Response.text() decodes: UTF-8, a leading BOM dropped, invalid sequences replaced. */
function decodeUtf8(chunks: readonly Uint8Array[]): string {
  return new TextDecoder("utf-8").decode(Buffer.concat(chunks));
}

function hint(status: number): string {
  switch (status) {
    case 401:
    case 403:
      return " (check the API key in the environment variable named by comparator_api_key_env, and the key header and prefix)";
    case 402:
      return " (payment required: the account's balance may be exhausted)";
    case 404:
      return " (check comparator_api_url and comparator_api_model)";
    default:
      return "";
  }
}

/**
 * HTTP to the hub with what large downloads need and plain fetch lacks: redirects followed by hand
 * so the token never leaves the hub's origin (the hub sends weights to a CDN on another host),
 * a stall timeout, and the classification of failures into ones worth retrying and ones not.
 */
import { MAX_TIMER_MS } from "@pbrl/core-tensor";
import { backoffMs as backoff, fetchFailure } from "../retry.js";

export interface RetryPolicy {
  /** Further attempts after the first; progress (bytes received) resets the count. */
  retries: number;
  /** The first wait; each further one doubles, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 5, baseDelayMs: 1000, maxDelayMs: 30_000 };

/** A failure another attempt may not meet: the network, a dropped connection, a stall, 429 or 5xx. */
export class TransientError extends Error {
  override name = "TransientError";
  constructor(
    message: string,
    /** A connection that could not be opened at all (refused, no DNS): the machine may be offline. */
    readonly unreachable = false,
  ) {
    super(message);
  }
}

/**
 * The most pbrl reads of a metadata answer (a revision's info, a page of a file list, an error) and
 * of a metadata file whose size the hub does not list: 64 MiB, far above any the hub sends.
 */
export const METADATA_LIMIT = 64 * 2 ** 20;

/**
 * A body, or undefined when it passes `limit` bytes (it is then read no further). The bytes
 * counted are the ones fetch hands over, after any Content-Encoding is undone, so a compressed
 * body cannot inflate past the limit either.
 */
export async function readBodyCapped(res: Response, limit: number): Promise<Buffer | undefined> {
  if (res.body === null) return Buffer.alloc(0);
  const parts: Uint8Array[] = [];
  let n = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(parts, n);
    n += value.length;
    if (n > limit) {
      await reader.cancel();
      return undefined;
    }
    parts.push(value);
  }
}

/** The wait before retry `attempt` (0-based) under `policy`: exponential, without jitter. */
export function backoffMs(attempt: number, policy: RetryPolicy): number {
  return backoff(attempt, { baseMs: policy.baseDelayMs, maxMs: policy.maxDelayMs });
}

export { sleep } from "../retry.js";

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH", "EADDRNOTAVAIL"]);

/** What went wrong in a fetch, in words that never include request headers (the token). */
export function describeNetworkError(err: unknown): { code: string; unreachable: boolean } {
  const e = err as { code?: string; cause?: { code?: string } };
  const failure = fetchFailure(err);
  const code = failure.code ?? failure.message;
  // fetch refuses some requests before connecting, without an errno ("bad port"): as hopeless as a refused connection.
  const refused = e.cause !== undefined && e.cause.code === undefined && e.code === undefined;
  return { code, unreachable: UNREACHABLE.has(code) || refused };
}

/** A timer that aborts a request when no byte has arrived for `ms`; `touch` on each byte. */
export class StallTimer {
  readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private readonly unlink: () => void;
  constructor(
    private readonly ms: number,
    outer?: AbortSignal,
  ) {
    this.ms = Math.min(ms, MAX_TIMER_MS);
    const forward = () => this.controller.abort(outer?.reason);
    outer?.addEventListener("abort", forward, { once: true });
    // One outer signal serves many requests: each timer takes its listener away when done.
    this.unlink = () => outer?.removeEventListener("abort", forward);
    this.touch();
  }
  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(new TransientError(`no data for ${this.ms / 1000} s`)), this.ms);
  }
  stop(): void {
    clearTimeout(this.timer);
    this.unlink();
  }
  get signal(): AbortSignal {
    return this.controller.signal;
  }
}

export interface HubFetchInit {
  method: "GET" | "HEAD";
  /** Sent as a Bearer token to the hub's own origin only. */
  token: string | undefined;
  /** The hub's origin (HF_ENDPOINT's): the only one that sees the token. */
  hubOrigin: string;
  headers?: Record<string, string>;
  /** Follow a redirect to another host (GET of a file), or stop there and return it (HEAD, for its headers). */
  followCrossOrigin: boolean;
  signal: AbortSignal;
}

const REDIRECT = new Set([301, 302, 303, 307, 308]);

/**
 * One request, redirects followed by hand. Throws TransientError for network failures (the
 * caller retries), never an error that carries the headers.
 */
export async function hubFetch(url: string, init: HubFetchInit): Promise<Response> {
  let current = new URL(url);
  for (let hop = 0; hop <= 10; hop++) {
    const sameOrigin = current.origin === init.hubOrigin;
    const headers: Record<string, string> = { "user-agent": "pbrl", ...init.headers };
    if (sameOrigin && init.token) headers["authorization"] = `Bearer ${init.token}`;
    let res: Response;
    try {
      res = await fetch(current, { method: init.method, headers, redirect: "manual", signal: init.signal });
    } catch (err) {
      if (init.signal.aborted && !(init.signal.reason instanceof TransientError)) throw init.signal.reason ?? err;
      if (init.signal.reason instanceof TransientError) throw init.signal.reason;
      const { code, unreachable } = describeNetworkError(err);
      throw new TransientError(code, unreachable);
    }
    const location = res.headers.get("location");
    if (!REDIRECT.has(res.status) || location === null) return res;
    const next = new URL(location, current);
    if (next.origin !== init.hubOrigin && !init.followCrossOrigin) return res;
    await res.body?.cancel();
    current = next;
  }
  throw new TransientError(`too many redirects from ${url}`);
}

/** 429 and 5xx are the hub's passing trouble; other statuses are answers. */
export function isTransientStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

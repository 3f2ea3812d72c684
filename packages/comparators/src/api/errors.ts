/**
 * Errors of the API comparator, and the helpers that keep credentials out of them: every message
 * is built from a display URL (no userinfo, key-like query values replaced) and from text passed
 * through a redactor that removes the key string itself.
 */

/** The placeholder that replaces a secret in any text the comparator produces. */
export const REDACTED = "[REDACTED]";

/** How many characters of a response body an error message quotes. */
export const BODY_SNIPPET_CHARS = 300;

/** Query parameter names whose values are treated as secrets in messages. */
const SECRET_QUERY = /(^|[_-])(key|api[_-]?key|apikey|token|access[_-]?token|secret|password|passwd|sig|signature|auth|authorization|code)$/i;

/** Removes every occurrence of each secret (and its URL-encoded form) from `text`. */
export function makeRedactor(secrets: readonly (string | null)[]): (text: string) => string {
  const forms = [...new Set(secrets.flatMap((s) => (s === null || s === "" ? [] : [s, encodeURIComponent(s)])))].sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (text) => text;
  return (text) => forms.reduce((t, f) => t.split(f).join(REDACTED), text);
}

/** The values of key-like query parameters (key=, api_key=, token=, …) of a URL. */
export function urlSecrets(url: string): string[] {
  try {
    return [...new URL(url).searchParams.entries()].filter(([name, value]) => SECRET_QUERY.test(name) && value !== "").map(([, value]) => value);
  } catch {
    return [];
  }
}

/**
 * The URL as messages and descriptions show it: userinfo removed, and the value of every query
 * parameter that looks like a credential (key=, api_key=, token=, …) replaced.
 */
export function displayUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "<invalid URL>";
  }
  u.username = "";
  u.password = "";
  for (const name of [...u.searchParams.keys()]) {
    if (SECRET_QUERY.test(name)) u.searchParams.set(name, "REDACTED");
  }
  return u.toString();
}

/** Whitespace collapsed, secrets removed, then cut to `max` characters. */
export function snippet(text: string, redact: (s: string) => string, max = BODY_SNIPPET_CHARS): string {
  const clean = redact(text).replace(/\s+/g, " ").trim();
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

export interface ApiComparatorErrorInfo {
  format: string;
  /** The display URL (never the key). */
  url: string;
  /** What went wrong, e.g. "HTTP 429", "timed out after 0.2 s", "too few completions". */
  kind: string;
  /** HTTP status of the last response, when there was one. */
  status?: number | undefined;
  /** HTTP attempts made for the failing request (0 when no request failed, e.g. a count check). */
  attempts: number;
  /** The start of the last response body (or the underlying error text), redacted. */
  detail?: string | undefined;
}

/**
 * A failed API comparator call. The message reads
 * `comparator API (<format>) POST <url>: <kind> after <n> attempts: <start of the body>`.
 */
export class ApiComparatorError extends Error {
  override name = "ApiComparatorError";
  readonly format: string;
  readonly url: string;
  readonly kind: string;
  readonly status: number | undefined;
  readonly attempts: number;

  constructor(info: ApiComparatorErrorInfo) {
    const tries = info.attempts > 0 ? ` after ${info.attempts} attempt${info.attempts === 1 ? "" : "s"}` : "";
    const detail = info.detail !== undefined && info.detail !== "" ? `: ${info.detail}` : "";
    super(`comparator API (${info.format}) POST ${info.url}: ${info.kind}${tries}${detail}`);
    this.format = info.format;
    this.url = info.url;
    this.kind = info.kind;
    this.status = info.status;
    this.attempts = info.attempts;
  }
}

/** Thrown into requests still queued or sleeping after another request of the same sample() failed. */
export class ApiCallCancelled extends Error {
  override name = "ApiCallCancelled";
  constructor() {
    super("comparator API request cancelled: another request of the same sample() call failed");
  }
}

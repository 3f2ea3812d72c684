/**
 * Errors of the API comparator, and the helpers that keep credentials out of them: every message
 * is built from a display URL (no userinfo, key-like query values replaced) and from text passed
 * through a redactor that removes the key string itself. Which names and values are credentials is
 * core-tensor's one rule (redact-secrets.ts), shared with every record pbrl writes.
 */
import { isSecretName, isSecretQueryName, REDACTED, REDACTED_IN_URL, redactSecretText } from "@pbrl/core-tensor";

/** The placeholder that replaces a secret in any text the comparator produces. */
export { REDACTED };

/** How many characters of a response body an error message quotes. */
export const BODY_SNIPPET_CHARS = 300;

/**
 * Header names whose values are credentials in messages: wider than the record rule (any part of
 * the name, so X-Auth-User or X-Api-Key-Id too), since a header's value only ever reaches a message
 * to be scrubbed from it.
 */
const SECRET_HEADER = /(auth|token|secret|key|password|passwd|signature|credential|cookie|session)/i;

/** Header values that carry a credential whatever the header is called: "Bearer …", "Basic …". */
const SCHEME_VALUE = /^\s*(bearer|basic|token|digest|apikey)\s+(\S.*)/i;

/**
 * Secrets shorter than this are not scrubbed from completions: "EMPTY" (vLLM's placeholder key)
 * or "1" would otherwise be cut out of ordinary text, and a value that short protects nothing.
 * Error messages and logs scrub every length.
 */
export const MIN_SCRUBBED_SECRET_CHARS = 8;

/** Removes every occurrence of each secret (and its URL-encoded form) from `text`. */
export function makeRedactor(secrets: readonly (string | null)[]): (text: string) => string {
  const given = secrets.filter((s): s is string => s !== null && s !== "");
  const forms = [...new Set(given.flatMap((s) => [s, encodeURIComponent(s)]))].sort((a, b) => b.length - a.length);
  return (text) => forms.reduce((t, f) => t.split(f).join(REDACTED), text);
}

/** The values of credential-like query parameters (key=, api_key=, token=, access_key_id=, …) of a URL. */
export function urlSecrets(url: string): string[] {
  try {
    return [...new URL(url).searchParams.entries()].filter(([name, value]) => isSecretQueryName(name) && value !== "").map(([, value]) => value);
  } catch {
    return [];
  }
}

/**
 * The URL as messages and descriptions show it: userinfo removed, and the value of every query
 * parameter that looks like a credential (key=, api_key=, token=, access_key_id=, …) replaced.
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
    if (isSecretQueryName(name)) u.searchParams.set(name, REDACTED_IN_URL);
  }
  return u.toString();
}

/**
 * `url` safe to write to disk (config.json, logs): as displayUrl shows it; text that does not
 * parse as a URL is kept with its secrets redacted (redactSecretText), so nothing the user wrote
 * is lost but the secrets.
 */
export function redactUrlSecrets(url: string): string {
  if (typeof url !== "string") return url;
  try {
    new URL(url);
  } catch {
    return redactSecretText(url);
  }
  return displayUrl(url);
}

/** Whether a header carries a credential: by its name (Authorization, x-api-key, …) or its value ("Bearer …"). */
export function isCredentialHeader(name: string, value: string): boolean {
  return SECRET_HEADER.test(name) || isSecretName(name) || SCHEME_VALUE.test(value);
}

/**
 * `headers` safe to write to disk: the value of every credential header (Authorization,
 * x-api-key, X-Auth-Token, Cookie, any "Bearer …" / "Basic …" value) replaced by [REDACTED];
 * other headers kept as they are.
 */
export function redactHeaderSecrets(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = isCredentialHeader(name, String(value)) ? REDACTED : value;
  return out;
}

/** The secrets in credential headers: the whole value, and the credential after a scheme ("Bearer <this>"). */
export function headerSecrets(headers: Readonly<Record<string, string>>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => {
    if (!isCredentialHeader(name, value)) return [];
    const scheme = SCHEME_VALUE.exec(value);
    return scheme === null ? [value.trim()] : [value.trim(), scheme[2]!.trim()];
  });
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

/**
 * A response body over comparator_api_max_response_bytes. Reading stopped at the limit (or
 * before reading, on a Content-Length over it) and the connection was closed. Not retried: the
 * same request gets the same oversized answer.
 */
export class ApiResponseTooLargeError extends ApiComparatorError {
  override name = "ApiResponseTooLargeError";
  /** comparator_api_max_response_bytes. */
  readonly limitBytes: number;
  /** Bytes read before stopping, or the Content-Length the server declared. */
  readonly receivedBytes: number;
  /** Whether receivedBytes is the declared Content-Length (nothing was read). */
  readonly declared: boolean;

  constructor(info: Omit<ApiComparatorErrorInfo, "kind" | "detail"> & { limitBytes: number; receivedBytes: number; declared: boolean }) {
    const seen = info.declared ? `its Content-Length is ${info.receivedBytes} bytes` : `reading stopped after ${info.receivedBytes} bytes`;
    super({
      ...info,
      kind: `response body larger than comparator_api_max_response_bytes=${info.limitBytes} (${seen}); not retried`,
      detail:
        'check that the server honours the token limit and does not stream (no "stream": true in comparator_api_extra_body), or raise comparator_api_max_response_bytes if replies this long are expected',
    });
    this.limitBytes = info.limitBytes;
    this.receivedBytes = info.receivedBytes;
    this.declared = info.declared;
  }
}

/** The JSON type of a value as a message names it: null, array, object, string, number, boolean (or the JS type of a non-JSON value). */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/**
 * A 2xx response that is not what the format promises: a body that is not JSON, or a completion
 * that is not a string (a number, an object, null, …). `path` points into the response, e.g.
 * `$.choices[1].message.content`; null for a body that is not JSON. Not retried.
 */
export class ApiMalformedResponseError extends ApiComparatorError {
  override name = "ApiMalformedResponseError";
  /** Where in the response, e.g. `$.completions[2]`; null when the body is not JSON. */
  readonly path: string | null;
  /** What was found there: a JSON type (number, object, null, …) or "text that is not JSON". */
  readonly receivedType: string;

  constructor(info: Omit<ApiComparatorErrorInfo, "kind"> & { path: string | null; receivedType: string; kind: string }) {
    super(info);
    this.path = info.path;
    this.receivedType = info.receivedType;
  }
}

/** A response with more completions than the request asked for (a server that ignores n / num_return_sequences). */
export class ApiTooManyCompletionsError extends ApiComparatorError {
  override name = "ApiTooManyCompletionsError";
  readonly requested: number;
  readonly received: number;

  constructor(info: Omit<ApiComparatorErrorInfo, "kind"> & { who: string; requested: number; received: number; hint: string }) {
    super({ ...info, kind: `too many completions for ${info.who}: requested ${info.requested}, received ${info.received}; ${info.hint}` });
    this.requested = info.requested;
    this.received = info.received;
  }
}

/** Thrown into requests still queued or sleeping after another request of the same sample() failed. */
export class ApiCallCancelled extends Error {
  override name = "ApiCallCancelled";
  constructor() {
    super("comparator API request cancelled: another request of the same sample() call failed");
  }
}

/** A comparator_api_* setting (or the key variable it names) that cannot work: bad input, found before any request. */
export class ApiSettingsError extends Error {
  override name = "ApiSettingsError";
}

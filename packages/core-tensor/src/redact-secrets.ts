/**
 * The one rule that keeps credentials out of what pbrl writes or prints (config.json, checkpoints'
 * state.json, model cards, logs, error messages). It lives here, at the bottom of the package graph,
 * because every layer writes such records: comparators (their URL and headers in messages), models
 * (hub uploads) and trainers (run records).
 *
 * A value is a secret when its key's name says so (api_key, apiKey, x-api-key, access_key_id,
 * client_secret, Authorization, …, at any depth of objects and arrays), or, whatever its key, when
 * it looks like one: a known token format (sk-…, hf_…, ghp_…, xox…-, AKIA…), a "Bearer …" /
 * "Basic …" credential, a URL's userinfo, or the value of a credential-like query parameter
 * (token=, key=, sig=, access_key_id=, X-Amz-Signature=, …). Redacting is idempotent, so a record
 * redacted twice, or compared with another redacted one, gives the same text.
 */

/** What replaces a secret. */
export const REDACTED = "[REDACTED]";

/** What replaces a secret query value inside a URL ("[" and "]" would be percent-encoded there). */
export const REDACTED_IN_URL = "REDACTED";

/**
 * Names (their last word or words, joined) that carry a credential. The last words decide, so
 * comparator_api_key_env (the name of a variable) or max_new_tokens (a count) are not secrets.
 */
const SECRET_NAMES = new Set([
  "key",
  "apikey",
  "token",
  "secret",
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "keyid",
  "signature",
  "sig",
  "cookie",
  "jwt",
  "sessionid",
]);

/** Query parameters that carry a credential in URLs only (an OAuth code, a session), not as record keys. */
const QUERY_ONLY_NAMES = new Set(["code", "session"]);

/** A name's words, lower case: api_key, apiKey, API-KEY and x-api-key2 all end in ["api", "key"]. */
function nameWords(name: string): string[] {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .replace(/([A-Za-z])([0-9])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "");
  while (words.length > 0 && /^[0-9]+$/.test(words.at(-1)!)) words.pop();
  return words;
}

function endsWithName(name: string, names: ReadonlySet<string>): boolean {
  const words = nameWords(name);
  for (let k = 1; k <= Math.min(3, words.length); k++) if (names.has(words.slice(-k).join(""))) return true;
  return false;
}

/** Whether a key's name says its value is a credential (api_key, apiKey, X-Auth-Token, client_secret, access_key_id, …). */
export function isSecretName(name: string): boolean {
  return endsWithName(name, SECRET_NAMES);
}

/** Whether a URL query parameter's value is a credential: a secret name, or code= / session=. */
export function isSecretQueryName(name: string): boolean {
  return isSecretName(name) || endsWithName(name, QUERY_ONLY_NAMES);
}

/** Token formats that are secrets wherever they appear (OpenAI, Anthropic, Hugging Face, GitHub, Slack, AWS, Google, GitLab, JWTs). */
const TOKEN_FORMATS = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g,
  /\bhf_[A-Za-z0-9]{20,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];

/** "Bearer <credential>" and the other HTTP schemes, wherever the text appears. */
const SCHEME_CREDENTIAL = /\b(Bearer|Basic|Digest|Token)(\s+)([A-Za-z0-9._~+/-]{8,}=*)/gi;

/** Whether a word after "Basic" is a credential, not prose ("Basic instructions"): a digit, base64 padding, or mixed case. */
const looksEncoded = (s: string) => /[0-9]/.test(s) || s.endsWith("=") || (/[a-z]/.test(s) && /[A-Z]/.test(s.slice(1)));

/** `name=value` at the start of the text or after ?, &, ; or # (a URL's query or fragment). */
const QUERY_PAIR = /(^|[?&;#])([^=&;#?\s]+)=([^&;#\s]*)/g;

/** A URL's userinfo ("//user:password@"). */
const USERINFO = /\/\/[^/?#@\s]*@/g;

/**
 * `text` with every secret it holds replaced and everything else kept: token-format strings and
 * scheme credentials become [REDACTED], a URL loses its userinfo, and credential-like query
 * parameters keep their name with the value REDACTED.
 */
export function redactSecretText(text: string): string {
  let out = TOKEN_FORMATS.reduce((t, re) => t.replace(re, REDACTED), text);
  out = out.replace(SCHEME_CREDENTIAL, (all, scheme: string, space: string, credential: string) =>
    looksEncoded(credential) ? `${scheme}${space}${REDACTED}` : all,
  );
  out = out.replace(USERINFO, "//");
  return out.replace(QUERY_PAIR, (all, sep: string, name: string, value: string) =>
    value !== "" && isSecretQueryName(safeDecode(name)) ? `${sep}${name}=${REDACTED_IN_URL}` : all,
  );
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Whether a value under a secret name is worth hiding: null, booleans and "" say nothing. */
const holdsSomething = (v: unknown) => v !== null && v !== undefined && typeof v !== "boolean" && v !== "";

/**
 * `value` with its secrets redacted, at any depth: the value of every key with a secret name is
 * replaced by [REDACTED] (null, booleans and "" are kept: they hide nothing and keep the record
 * readable), and every string is passed through redactSecretText. Other values are kept as they are.
 */
export function redactSecrets(value: unknown): unknown {
  if (typeof value === "string") return redactSecretText(value);
  if (Array.isArray(value)) return value.map(redactSecrets);
  // An object JSON writes by its own toJSON (a Date) is kept; any other is written field by field.
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON !== "function") {
    return redactRecord(value as Record<string, unknown>);
  }
  return value;
}

/** redactSecrets for a record (config.json, state.json's config, a model card's config). */
export function redactRecord(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, isSecretName(k) && holdsSomething(v) ? REDACTED : redactSecrets(v)]));
}

// The checks of the comparator_api_* settings, each error naming the field and what it accepts.
import { timerDelayMs } from "@pbrl/core-tensor";
import { ApiSettingsError } from "./errors.js";
import type { ApiFormat } from "./formats.js";

/** comparator_api_max_response_bytes when not set: 8 MiB, far above any completion of max_new_tokens ≤ 256. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** The smallest limit accepted (the config's minimum): below it, ordinary error bodies would not fit. */
export const MIN_MAX_RESPONSE_BYTES = 1024;
/** The largest limit accepted: a body is held whole as one string, and V8 strings stop near 512 Mi characters. */
export const MAX_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export const KEY_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export function checkUrl(url: string): string {
  if (typeof url !== "string" || url.trim() === "") throw new ApiSettingsError("comparator_api_url is required for the API comparator");
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new ApiSettingsError("comparator_api_url is not a valid absolute URL (expected e.g. https://api.openai.com/v1/chat/completions)");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new ApiSettingsError(`comparator_api_url must be an http:// or https:// URL, got ${u.protocol}`);
  if (u.username !== "" || u.password !== "")
    throw new ApiSettingsError(
      "comparator_api_url must not contain credentials (user:password@); put the key in the environment variable named by comparator_api_key_env",
    );
  return u.toString();
}

export function exampleModel(format: ApiFormat): string {
  switch (format) {
    case "anthropic":
      return "claude-sonnet-4-20250514";
    case "openai_responses":
      return "gpt-5.1-codex";
    default:
      return "gpt-4o-mini or deepseek-chat";
  }
}

export function positiveInt(v: number, field: string): number {
  if (!Number.isInteger(v) || v < 1) throw new ApiSettingsError(`${field} must be an integer ≥ 1, got ${v}`);
  return v;
}

export function nonNegativeInt(v: number, field: string): number {
  if (!Number.isInteger(v) || v < 0) throw new ApiSettingsError(`${field} must be an integer ≥ 0, got ${v}`);
  return v;
}

export function maxResponseBytes(v: number | undefined): number {
  if (v === undefined) return DEFAULT_MAX_RESPONSE_BYTES;
  if (!Number.isInteger(v) || v < MIN_MAX_RESPONSE_BYTES || v > MAX_MAX_RESPONSE_BYTES) {
    throw new ApiSettingsError(
      `comparator_api_max_response_bytes must be an integer from ${MIN_MAX_RESPONSE_BYTES} to ${MAX_MAX_RESPONSE_BYTES} (256 MiB), got ${v}`,
    );
  }
  return v;
}

export function nonNegativeNumber(v: number, field: string): number {
  if (!(Number.isFinite(v) && v >= 0)) throw new ApiSettingsError(`${field} must be a finite number ≥ 0, got ${v}`);
  return v;
}

/** comparator_api_timeout (default 120 s) as a timer delay: longer than ~24.8 days waits ~24.8 days (core-tensor's timerDelayMs). */
export function timeoutMs(seconds: number | undefined): number {
  const v = seconds ?? 120;
  if (!(Number.isFinite(v) && v > 0)) throw new ApiSettingsError(`comparator_api_timeout must be a positive number of seconds, got ${v}`);
  return timerDelayMs(v);
}

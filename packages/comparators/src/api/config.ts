import type { ApiComparatorSettings } from "./api-comparator.js";
import type { ApiFormatName } from "./formats.js";

/** The comparator_api_* fields of an iterative trainer config (normalised values). */
export interface ApiConfigFields {
  comparator_api_url: string | null;
  comparator_api_format: string;
  comparator_api_model?: string | null;
  comparator_api_max_n_per_request?: number | null;
  comparator_api_timeout?: number;
  comparator_api_headers?: Readonly<Record<string, string>> | null;
  comparator_api_key_env?: string | null;
  comparator_api_key_header?: string;
  comparator_api_key_prefix?: string;
  comparator_api_response_field?: string;
  comparator_api_extra_body?: Readonly<Record<string, unknown>> | null;
  comparator_api_max_concurrency?: number;
  comparator_api_max_retries?: number;
  comparator_api_allow_partial?: boolean;
  comparator_api_max_response_bytes?: number;
}

/**
 * ApiComparatorSettings from a config's comparator_api_* fields, for
 * `createComparator({ ..., policy: "api", api: apiSettingsFromConfig(config) })`. Fields left out
 * take the comparator's defaults (the same as the config's). Hooks such as env, rng, sleep,
 * onRetry and log can be added to the result.
 */
export function apiSettingsFromConfig(c: ApiConfigFields): ApiComparatorSettings {
  if (c.comparator_api_url === null || c.comparator_api_url === undefined) throw new Error('comparator_api_url is required with comparator_policy="api"');
  return {
    format: c.comparator_api_format as ApiFormatName,
    url: c.comparator_api_url,
    model: c.comparator_api_model ?? null,
    keyEnv: c.comparator_api_key_env ?? null,
    ...(c.comparator_api_key_header !== undefined && { keyHeader: c.comparator_api_key_header }),
    ...(c.comparator_api_key_prefix !== undefined && { keyPrefix: c.comparator_api_key_prefix }),
    headers: c.comparator_api_headers ?? null,
    extraBody: c.comparator_api_extra_body ?? null,
    ...(c.comparator_api_timeout !== undefined && { timeoutSeconds: c.comparator_api_timeout }),
    ...(c.comparator_api_max_concurrency !== undefined && { maxConcurrency: c.comparator_api_max_concurrency }),
    ...(c.comparator_api_max_retries !== undefined && { maxRetries: c.comparator_api_max_retries }),
    maxNPerRequest: c.comparator_api_max_n_per_request ?? null,
    ...(c.comparator_api_allow_partial !== undefined && { allowPartial: c.comparator_api_allow_partial }),
    ...(c.comparator_api_response_field !== undefined && { responseField: c.comparator_api_response_field }),
    ...(c.comparator_api_max_response_bytes !== undefined && { maxResponseBytes: c.comparator_api_max_response_bytes }),
  };
}

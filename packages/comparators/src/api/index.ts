export { ApiComparator } from "./api-comparator.js";
export { DEFAULT_MAX_RESPONSE_BYTES, MIN_MAX_RESPONSE_BYTES, MAX_MAX_RESPONSE_BYTES } from "./setting-checks.js";
export type { ApiComparatorOptions, ApiComparatorSettings, ApiComparatorStats } from "./api-comparator.js";
export {
  API_FORMAT_ALIASES,
  normalizeApiFormat,
  defaultKeyEnv,
  buildBody,
  parseResponse,
  parseResponseBody,
  planCounts,
  providerNLimit,
  jsonSafe,
} from "./formats.js";
export type { ApiFormat, ApiFormatName, ApiGenerationSettings, ApiRequestSpec, ParsedCompletions, ResponseSource } from "./formats.js";
export {
  ApiComparatorError,
  ApiSettingsError,
  ApiResponseTooLargeError,
  ApiMalformedResponseError,
  ApiTooManyCompletionsError,
  displayUrl,
  redactUrlSecrets,
  redactHeaderSecrets,
  REDACTED,
} from "./errors.js";
export type { ApiRetryEvent, SleepFn } from "./transport.js";
export { truncateToTokens } from "./truncate.js";
export type { ApiTokenizer } from "./truncate.js";

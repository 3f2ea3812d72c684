export { ApiComparator } from "./api-comparator.js";
export type { ApiComparatorOptions, ApiComparatorSettings, ApiComparatorStats } from "./api-comparator.js";
export { apiSettingsFromConfig } from "./config.js";
export type { ApiConfigFields } from "./config.js";
export { API_FORMAT_ALIASES, normalizeApiFormat, defaultKeyEnv, buildBody, parseResponse, planCounts, providerNLimit, jsonSafe } from "./formats.js";
export type { ApiFormat, ApiFormatName, ApiGenerationSettings, ApiRequestSpec, ParsedCompletions } from "./formats.js";
export { ApiComparatorError, displayUrl } from "./errors.js";
export type { ApiRetryEvent, SleepFn } from "./transport.js";

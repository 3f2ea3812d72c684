export { TaggedCentralizedAdapter } from "./tagged-adapter.js";
export { splitJointCompletions } from "./split-joint.js";
export type { SplitJoint } from "./split-joint.js";
export { LiveAgents, pickAgents } from "./policy-source.js";
export type { PolicySource, RoundPolicy } from "./policy-source.js";
export { comparatorDevicesDiffer, comparatorDevices, placement } from "./devices.js";
export { RoundCopies } from "./round-copies.js";
export { FrozenModels } from "./frozen-models.js";
export { HistoryWeights } from "./history-weights.js";
export type { WeightsAt, HistoryWeightsOptions } from "./history-weights.js";
export {
  loadModelSource,
  loadModelSources,
  releaseLoaded,
  pairWithAgent,
  decentralizedModelSources,
  centralizedModelSource,
  VocabularyMismatchError,
} from "./model-sources.js";
export type { ModelSource, LoadedModel } from "./model-sources.js";
export { LocalComparator } from "./local-comparator.js";
export { CurrentComparator, CurrentCopyComparator, ModelComparator, HistoryComparator } from "./comparators.js";
export type { LocalComparatorOptions, ComparatorDeviceOptions, CurrentCopyOptions, ModelComparatorOptions, HistoryComparatorOptions } from "./comparators.js";
export { CentralizedComparator } from "./centralized.js";
export type { CentralizedComparatorOptions } from "./centralized.js";
export { createComparator } from "./factory.js";
export type { ComparatorOptions, ComparatorPolicy, ComparatorGenerationMode } from "./factory.js";
export {
  ApiComparator,
  ApiComparatorError,
  ApiSettingsError,
  ApiResponseTooLargeError,
  ApiMalformedResponseError,
  ApiTooManyCompletionsError,
  normalizeApiFormat,
  API_FORMAT_ALIASES,
  DEFAULT_MAX_RESPONSE_BYTES,
  redactUrlSecrets,
  redactHeaderSecrets,
} from "./api/index.js";
export type {
  ApiComparatorOptions,
  ApiComparatorSettings,
  ApiComparatorStats,
  ApiFormat,
  ApiFormatName,
  ApiGenerationSettings,
  ApiRetryEvent,
  ApiTokenizer,
  SleepFn,
} from "./api/index.js";

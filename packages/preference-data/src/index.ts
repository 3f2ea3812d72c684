export type { TaskItem, ChatMessage, Prompt, Formatter, RewardContext, RewardFunc, RewardProcessor } from "./types.js";
export {
  defaultFormatter,
  resolveFormatters,
  formatPrompts,
  formatAgentPrompts,
  formatAgentPromptsAsync,
  isChatPrompt,
  isEmptyPrompt,
  FormatterError,
} from "./formatters.js";
export { ChatTemplateError, renderPrompt, encodePrompt, encodePromptText, encodeRenderedPrompt, promptItemName } from "./chat.js";
export type { PromptTokenizer, PromptSite, EncodedPrompt } from "./chat.js";
export type { AsyncFormatter, AsyncFormatOptions, DatasetName, FormatOptions, FormatterFailure, FormatterUnit } from "./formatters.js";
export { PromptBook } from "./prompt-book.js";
export type { RenderedItem } from "./prompt-book.js";
export { describeItem, describeValue, errorMessage } from "./describe.js";
export { EmptyDatasetError } from "./dataset.js";
export { PAIR_SELECTION_MODES, nonTiedPairs, selectPairs } from "./pair-selection.js";
export type { PairSelectionMode, IndexPair } from "./pair-selection.js";
export { scoreJointCandidates, RewardError, RewardTimeoutError, DEFAULT_REWARD_TIMEOUT_S } from "./reward.js";
export type { ScoredCandidates, RewardCallOptions } from "./reward.js";
export { scoreRewardJobs } from "./score-batch.js";
export type { RewardJob, ScoreBatchOptions } from "./score-batch.js";
export {
  PromptTooLongError,
  fitPromptIds,
  truncatePromptIds,
  promptTextToEncode,
  textTailWithinBytes,
  CUT_MARGIN_TOKENS,
  emptyTally,
  tallyTruncation,
  truncationWarning,
  warnTruncation,
} from "./prompt-length.js";
export type { PromptLimits, FittedPrompt, TruncationTally } from "./prompt-length.js";
export {
  PairRecordSchema,
  RoundFileSchema,
  PairsFileSchema,
  PairFileError,
  roundFileName,
  writeRoundFile,
  readRoundFile,
  writePairsFile,
  readPairsFile,
  PREFERENCE_SCORERS,
} from "./pair-record.js";
export type { PairRecord, RoundFile, PairsFile, PreferenceScorer } from "./pair-record.js";
export { PolicySampler, ParallelPolicySampler, sampleAgentRows, promptTexts } from "./sampler.js";
export type { AgentSamples, AgentRowsGenerator, CandidateSampler, Policy, GenerationSettings } from "./sampler.js";
export { collectPreferencePairs } from "./collect.js";
export type { AgentPairTokens, CollectedPair, CollectOptions, CollectResult, CandidateCheck, RoundCollectionOptions } from "./collect.js";
export type { CandidateSet, Comparator, CentralizedAdapter, ReplayIndexEntry, ReplayState, PairTokenizer, ReplayBuffer } from "./interfaces.js";
export { CentralizedParseError } from "./interfaces.js";
export { pairTokensFromRecord, candidateTokens, RetokenizeError } from "./retokenize.js";
export type { AgentTokenizing } from "./retokenize.js";
export { COMPARISON_SELECTION_MODES, selectComparisons, selectOpenComparisons } from "./comparison-selection.js";
export type { ComparisonSelectionMode, Comparison, OpenComparisonOrder } from "./comparison-selection.js";
export { collectComparisons, pairOf } from "./compare.js";
export type { BothSidesOptions, CompareOptions, CompareResult, JointAnswers, PairLabelFields } from "./compare.js";
export { collectOpenComparisons } from "./open-comparisons.js";
export type { ComparisonRewards, OpenComparison, OpenComparisonOptions, OpenComparisonResult } from "./open-comparisons.js";
export { negLogSigmoid } from "./preference-likelihood.js";
export type { TrainableAgent } from "./trainable-agent.js";
export {
  loadDataset,
  hasDataExtension,
  DatasetError,
  parseCsv,
  csvRows,
  CsvSyntaxError,
  readUtf8File,
  firstInvalidUtf8,
  describeInvalidUtf8,
} from "./datasets/index.js";
export type { DatasetRequest, DatasetSource, LoadDatasetOptions, DatasetErrorCode, CsvRecord } from "./datasets/index.js";

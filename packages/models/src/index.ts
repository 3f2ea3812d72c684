export { parseModelConfig, serializeModelConfig, llamaConfigJson, ModelConfigError, SUPPORTED_MODEL_TYPES } from "./config.js";
export type { Architecture, CausalLMConfig, LayerSpec, ModelType, RopeScaling, RopeSpec } from "./config.js";
export { fusedDecodeSupport } from "./fused-decode.js";
export type { DecodeWeights, FusedDecodeSupport } from "./fused-decode.js";
export { CausalLM, WeightLoadError, emptyCache, disposeCache } from "./causal-lm.js";
export type { ForwardInput, KVCache } from "./causal-lm.js";
export { parameterSpecs } from "./parameters.js";
export type { ParameterSpec } from "./parameters.js";
export { attentionBias, positionsFromMask, windowedKeyMask, MASKED } from "./attention-mask.js";
export { invFreqOf, ropeInvFreq, ropeTables, RotaryEmbedding } from "./rope.js";
export { gatherRows, matMul, selectedLogProbs } from "./ops.js";
export { Tokenizer, TokenizerLoadError } from "./tokenizer.js";
export type { ChatMessage, TokenizerFiles } from "./tokenizer.js";
export { parseGenerationConfig } from "./generation-config.js";
export type { GenerationDefaults } from "./generation-config.js";
export { loadAdapterOnto, loadPretrained, savePretrained, type LoadOptions } from "./checkpoint.js";
export type { Pretrained, SaveOptions, SaveDtype } from "./checkpoint.js";
export {
  resolveModelDir,
  HUB_ID,
  hubCacheDir,
  hubDownloadTimeoutMs,
  hubEndpoint,
  hubOffline,
  ModelSourceError,
  COMMIT_HASH,
  isSafeRepoPath,
  isSafeRevision,
  outsideCache,
  METADATA_LIMIT,
  readBodyCapped,
  downloadModel,
  hubProgressPrinter,
  onHubProgress,
  HubPushError,
  pushToHub,
  describeSkipped,
  baseModelFromConfig,
  modelCard,
} from "./hub.js";
export { downloadRepoFile, hubApiUrl, hubClient, hubRequest, hubResolveUrl, HubUnreachableError } from "./hub/client.js";
export type { HubClient, HubClientOptions, ListedFile } from "./hub/client.js";
export type {
  DownloadOptions,
  HubProgress,
  HubProgressListener,
  ProgressPrinterOptions,
  PushOptions,
  PushResult,
  SkippedPath,
  SkipReason,
  ModelCardInput,
  RetryPolicy,
  RepoType,
} from "./hub.js";
export { backoffMs, fetchFailure, sleep, type Backoff, type SleepFn } from "./retry.js";
export { generate } from "./generate.js";
export { checkContextLength, contextLengthMessage, ContextLengthError } from "./context-length.js";
export type { ContextLengthDetails } from "./context-length.js";
export { countNonFinite, checkFiniteWeight } from "./finite-weights.js";
export {
  forwardEstimate,
  generationEstimate,
  memoryEstimate,
  modelSizes,
  sumEstimates,
  trainingActivationBytes,
  trainingStepEstimate,
  optimizerTemporaryBytes,
  weightsEstimate,
} from "./memory-estimate.js";
export type { ForwardWorkload, GenerationWorkload, KernelFamily, MemoryEstimate, MemoryItem, ModelSizes, TrainingStepWorkload } from "./memory-estimate.js";
export {
  activeKernelFamily,
  checkGeneration,
  checkMemory,
  checkTrainingStep,
  describeEstimate,
  describeModel,
  GENERATION_ADVICE,
  TRAINING_ADVICE,
  UNLIMITED_BACKEND_ADVICE,
} from "./memory-check.js";
export type { MemoryCheck } from "./memory-check.js";
export type { GenerateOptions, GeneratedSequence } from "./generate.js";
export { argmax, chooseToken, samplingDistribution, validateSampling } from "./sampling.js";
export type { SamplingOptions } from "./sampling.js";
export { buildScoringBatch, completionLogProbs, scoreCompletions } from "./scoring.js";
export type { ScoringItem, ScoringBatch, ScoreResult } from "./scoring.js";
export { ScalarHead, lastTokenIndices } from "./heads.js";
export type { ScalarHeadOptions } from "./heads.js";
export { ScalarHeadModel, defaultPadTokenId, headOn, splitGrads } from "./scalar-head-model.js";
export { padRows, realLengths } from "./padded-rows.js";
export type { PaddedBatch, PaddingSide } from "./padded-rows.js";
export { DEFAULT_LORA, LoraSettingsError, decoderLinears, loraScaling, loraTargets, loraSettingsProblems, type LoraSettings } from "./lora/settings.js";
export { LoraAdapter, type LoraModule, type LoraSpec } from "./lora/adapter.js";
export { ADAPTER_CONFIG, ADAPTER_WEIGHTS, isAdapterFolder, readAdapterConfig, type AdapterConfig } from "./lora/peft-files.js";

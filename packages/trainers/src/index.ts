export { MADPOConfig, MADPO_FIELDS, MADPO_ONLY_FIELDS, PREFERENCE_FIELDS, madpoRules } from "./config/madpo-config.js";
export type { MADPOConfigInput, PreferenceConfig } from "./config/madpo-config.js";
export { ConfigError, buildConfig } from "./config/define-config.js";
export type { ConfigRule } from "./config/define-config.js";
export { closestName, editDistance } from "./config/closest.js";
export { MADPOTrainer } from "./madpo-trainer.js";
export { MADPOIterTrainer } from "./madpo-iter-trainer.js";
export type { MADPOIterTrainerOptions } from "./madpo-iter-trainer.js";
export type { IterativeTrainerOptions, IterTrainResult, RoundSummary } from "./iterative-trainer.js";
export { HUMAN_LABELS_DIR, labelPageLines } from "./human-judges.js";
export type { LearnContext, RoundContext, PreferenceScoring } from "./learner.js";
export type { TrainerOptions } from "./trainer-core.js";
export type { TrainerCallback, TrainerControl, TrainerState } from "./callbacks.js";
export type { ComparatorContext, ComparatorFactory, PluginRecord } from "./custom-plugins.js";
export type { TrainerDataset } from "./trainer-datasets.js";
export { MARLHFTrainer } from "./marlhf-trainer.js";
export type { MARLHFTrainerOptions } from "./marlhf-trainer.js";
export { MARLHFIterTrainer } from "./marlhf-iter-trainer.js";
export type { MARLHFIterTrainerOptions } from "./marlhf-iter-trainer.js";
export { MADPOIterConfig, MADPO_ITER_FIELDS, ITERATIVE_FIELDS, ITERATIVE_CONFIG_FIELDS, iterativeRules, finishIterative } from "./config/madpo-iter-config.js";
export type { IterativeConfig, MADPOIterConfigInput } from "./config/madpo-iter-config.js";
export { MARLHFConfig, MARLHFIterConfig, MARLHF_FIELDS, MARLHF_ITER_FIELDS } from "./config/marlhf-config.js";
export type { MARLHFConfigInput, MARLHFIterConfigInput } from "./config/marlhf-config.js";
// The algorithm tables MARLHF's config reads, declared once in @pbrl/rl-backends.
export { RL_ALGORITHMS, RL_ALGORITHM_ALIASES, REINFORCE_ALGORITHMS } from "@pbrl/rl-backends";
export type { RlAlgorithm } from "@pbrl/rl-backends";
export { loadTrainingCheckpoint, CheckpointError } from "./training-checkpoint.js";
export { RunDirError, RUN_OUTPUTS } from "./run-dir.js";
export { RunLockError } from "./run-lock.js";
export { RunStoppedError } from "./stop-signals.js";
export { RESUMABLE_FIELDS } from "./resume-changes.js";
export type { TrainingState } from "./training-checkpoint.js";
export type { MADPOTrainerOptions } from "./madpo-trainer.js";
export type { TrainResult } from "./base-trainer.js";
export { resolveAgents, AgentSourceError } from "./agents.js";
export type { AgentSource, ResolvedAgent } from "./agents.js";
export { evaluatePolicies } from "./evaluation.js";
export type { EvalResult, EvalSample } from "./evaluation.js";
export { MetricsLog } from "./metrics-log.js";
export type { MetricsListener, MetricsRecord } from "./metrics-log.js";
export { ProgressBar } from "./progress.js";
export type { ProgressMode } from "./progress.js";
export { AgentWorkers } from "./parallel/agent-workers.js";
export { agentExecution, closeRankChannels, localTeam } from "./parallel/agent-execution.js";
export { checkDdp } from "./parallel/ddp-check.js";
export { serveAgentRank } from "./parallel/rank-serve.js";
export type { AgentExecution, AgentTeam } from "./parallel/agent-execution.js";
export type { PolicyStepJob, PolicyStepResult } from "@pbrl/rl-backends";
// The data-side contracts a user needs to write tasks, rewards and samplers.
export type {
  TaskItem,
  Formatter,
  RewardFunc,
  RewardContext,
  RewardProcessor,
  PairRecord,
  CandidateSampler,
  Comparator,
  CandidateSet,
  ReplayBuffer,
  ReplayState,
  CentralizedAdapter,
  CollectedPair,
  PairTokenizer,
} from "@pbrl/preference-data";
export { CentralizedParseError } from "@pbrl/preference-data";
export { TaggedCentralizedAdapter } from "@pbrl/comparators";
export { readEvents, TensorBoardWriter, tensorBoardDir, TENSORBOARD_SUBDIR, histogramOf } from "./tensorboard/index.js";
export type { HistogramBins, TensorBoardEvent, TensorBoardWriterOptions, ReadSummaryValue } from "./tensorboard/index.js";
export { TRAINER_CONFIGS } from "./config/trainer-configs.js";
export type { TrainerConfigInfo, TrainerConfigName } from "./config/trainer-configs.js";
export { fieldDocs, fieldJsonSchema, configJsonSchema } from "./config/field-docs.js";
export type { FieldDoc, JsonSchema } from "./config/field-docs.js";
export { aboveSafeInteger, fieldMeta, problemOf } from "./config/fields.js";
export type { FieldMeta } from "./config/fields.js";
export type { Fields } from "./config/define-config.js";

export { MADPOConfig, MADPO_FIELDS, madpoRules } from "./config/madpo-config.js";
export type { MADPOConfigInput } from "./config/madpo-config.js";
export { ConfigError, buildConfig } from "./config/define-config.js";
export type { ConfigRule } from "./config/define-config.js";
export { closestName, editDistance } from "./config/closest.js";
export { MADPOTrainer } from "./madpo-trainer.js";
export type { MADPOTrainerOptions, TrainResult } from "./madpo-trainer.js";
export { resolveAgents, AgentSourceError } from "./agents.js";
export type { AgentSource, ResolvedAgent } from "./agents.js";
export { evaluatePolicies } from "./evaluation.js";
export type { EvalResult, EvalSample } from "./evaluation.js";
export { MetricsLog } from "./metrics-log.js";
export type { MetricsRecord } from "./metrics-log.js";
export { ProgressBar } from "./progress.js";
// The data-side contracts a user needs to write tasks, rewards and samplers.
export type { TaskItem, Formatter, RewardFunc, RewardContext, RewardProcessor, PairRecord, CandidateSampler } from "@pbrl/preference-data";

export { JointRewardModel, RewardModelError, NonFiniteRewardError, REWARD_HEAD_FILE, REWARD_CONFIG_FILE, REWARD_HEAD_PREFIX } from "./reward-model.js";
export type {
  JointInput,
  CreateRewardModelOptions,
  ScoreOptions,
  RewardTrainOptions,
  RewardTrainResult,
  RewardBatchMetrics,
  RewardEvalResult,
} from "./reward-model.js";
export { jointText } from "./joint-text.js";
export { encodeKeepEnd } from "./tokenize.js";
// Defined in @pbrl/models (the scalar-head model pads its rows with it); re-exported for the reward model's callers.
export { padRows } from "@pbrl/models";
export type { PaddedBatch, PaddingSide } from "@pbrl/models";
export { bradleyTerryLoss, pairMetrics } from "./loss.js";
// Defined once (the Bradley–Terry likelihood MADPO shares); re-exported for the reward model's callers.
export { negLogSigmoid } from "@pbrl/preference-data";
export type { PairMetrics } from "./loss.js";

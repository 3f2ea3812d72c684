export {
  ADVANTAGE_MODES,
  ADVANTAGE_STD_FLOOR,
  REINFORCE_ALGORITHMS,
  ACTOR_CRITIC_ALGORITHMS,
  RL_ALGORITHMS,
  RL_ALGORITHM_ALIASES,
  RlAlgorithmError,
  canonicalRlAlgorithm,
  isReinforceAlgorithm,
  advantageModeFor,
  baselineAdvantages,
  normalizationScale,
  groupAdvantages,
  shapeReturns,
  stdPop,
} from "./advantages.js";
export type { AdvantageMode, ReinforceAlgorithm, ActorCriticAlgorithm, RlAlgorithm } from "./advantages.js";
export { collectRollouts } from "./rollouts.js";
export type { Rollout, JointReward, CollectRolloutsOptions } from "./rollouts.js";
export { policyGradientUpdate, policyRows, sequenceLogProbs, agentAdvantages, NonFiniteError } from "./update.js";
export type { TrainableAgent, Penalties, PolicyGradientOptions, PolicyGradientMetrics } from "./update.js";
export { runRlEpochs } from "./epochs.js";
export type { RlEpochsOptions, ReturnShaping, BatchPosition, BatchReport } from "./epochs.js";

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
export { policyGradientUpdate, policyGradientMetrics, policyRows, rowOwners, agentAdvantages } from "./update.js";
export type { Penalties, PolicyGradientOptions, PolicyGradientMetrics } from "./update.js";
export {
  policyGradientStep,
  sequenceLogProbs,
  localPolicyGradientAgents,
  checkPolicyJob,
  policyGradients,
  applyPolicyGradients,
  nonFiniteRow,
} from "./policy-step.js";
export type { PolicyStepJob, PolicyStepResult, PolicyScorer, PolicyGradientAgents, PolicyGradients } from "./policy-step.js";
// Defined once below both algorithm packages; re-exported where the RL algorithms' callers look for them.
export { NonFiniteError } from "@pbrl/core-tensor";
export type { TrainableAgent } from "@pbrl/preference-data";
export { runRlEpochs, miniBatches } from "./epochs.js";
export type { RlEpochsOptions, CollectionSettings, ReturnShaping, BatchPosition, BatchReport } from "./epochs.js";
export { KL_ESTIMATORS, tokenKl, sequenceKl, frozenReference, referenceKls, referenceKlsFrom, referenceKlPenalties, referenceKlShaping } from "./kl.js";
export type { KlEstimator, KlPolicy, ReferenceKlOptions, ReferenceKlShapingOptions } from "./kl.js";
export { valueLoss, valueLossTerms, meanValueLoss } from "./value-loss.js";
export type { ValueLossTerms, ValueLossOptions } from "./value-loss.js";
export {
  Critic,
  ActorValueHead,
  CRITIC_TYPES,
  VALUE_HEAD_PREFIX,
  VALUE_HEAD_FILE,
  VALUE_HEAD_INIT_STD,
  checkCriticType,
  maacCriticText,
  iacCriticText,
} from "./critic.js";
export type { CriticType, CriticRow, CriticFitOptions, CriticFitMetrics, CreateCriticOptions } from "./critic.js";
export { ActorCriticSetupError, actorCriticUpdate, actorCriticValues, runActorCriticEpochs } from "./actor-critic.js";
export type { ActorCriticSetup, ActorCriticEpochsOptions } from "./actor-critic.js";
export type { ActorCriticOptions, SampleValues } from "./actor-critic-batch.js";
export { actorCriticAdvantages, shapedReturns } from "./actor-critic-advantages.js";
export { actorForward } from "./iac-shared-head.js";
export { policyGradientLoss } from "./policy-loss.js";
export { CriticSourceError, criticDevices, resolveCriticSources, resolveRewardModelSource, validateActorCriticSettings } from "./critic-sources.js";
export type { CriticDeviceSpec, CriticSourceOptions, CriticSource, CriticPlan, RewardModelSourceOptions, ActorCriticSettings } from "./critic-sources.js";

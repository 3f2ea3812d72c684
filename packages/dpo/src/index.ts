export { negLogSigmoid, jointMargins, madpoLoss, agentLoss, othersSum, marginMetrics } from "./loss.js";
export type { MarginMetrics } from "./loss.js";
export { scoredTokens, agentMargins } from "./scoring.js";
export { madpoUpdate, localAgents, agentPairs, detachedMargins, checkMargins, agentStep, NonFiniteError } from "./update.js";
export type { TrainableAgent, MadpoAgents, MadpoUpdateOptions } from "./update.js";

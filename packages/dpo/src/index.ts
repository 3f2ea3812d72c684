export { jointMargins, madpoLoss, agentLoss, othersSum, marginMetrics } from "./loss.js";
export type { MarginMetrics } from "./loss.js";
export { scoredTokens, agentMargins } from "./scoring.js";
export { madpoUpdate, localAgents, agentPairs, detachedMargins, checkMargins, agentStep, agentGradients, applyAgentGradients } from "./update.js";
export type { AgentGradients } from "./update.js";
export type { MadpoAgents, MadpoUpdateOptions } from "./update.js";
// Defined once below both algorithm packages; re-exported where MADPO's callers look for them.
export { NonFiniteError } from "@pbrl/core-tensor";
export { negLogSigmoid } from "@pbrl/preference-data";
export type { TrainableAgent } from "@pbrl/preference-data";

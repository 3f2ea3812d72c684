export { negLogSigmoid, jointMargins, madpoLoss, agentLoss, othersSum, marginMetrics } from "./loss.js";
export type { MarginMetrics } from "./loss.js";
export { scoredTokens, agentMargins } from "./scoring.js";
export { madpoUpdate, NonFiniteError } from "./update.js";
export type { TrainableAgent, MadpoUpdateOptions } from "./update.js";

export type { Comparison, LabelRecord, RecordedVerdict, Side, Verdict } from "./types.js";
export { RECORDED_VERDICTS, VERDICTS } from "./types.js";
export { LabelConflictError, LabelFileError, type LabelConflictReason } from "./errors.js";
export { LabelRecordSchema, makeLabelRecord, parseLabelRecord, recordedVerdict, type PickDetails } from "./label-record.js";
export { LabelLog, labelFilePath, readLabels } from "./label-log.js";
export {
  DEFAULT_LEASE_MS,
  LabelRound,
  type ComparisonOutcome,
  type HumanPair,
  type LabelProgress,
  type LabelRoundOptions,
  type LabelSink,
  type Lease,
  type WaitForOptions,
  type WaitResult,
} from "./label-queue.js";
export { fnv1a32, mulberry32First, seededOrder } from "./seeded-order.js";
export { startLabelServer, type EvalPoint, type LabelRunStatus, type LabelServer, type LabelServerOptions, type LabelStatusReply } from "./server.js";
export { MAX_BODY_BYTES } from "./request-body.js";
export { RESTART_MESSAGE, TOKEN_HEADER } from "./http-guard.js";

/**
 * Typed errors, so callers (the server above all) can tell a conflict a person caused — a stale
 * page, a double click, a second tab — from a fault, and answer 409 instead of 500.
 */

export type LabelConflictReason = "unknown_lease" | "expired_lease" | "foreign_lease" | "already_labelled" | "lease_in_use";

const MESSAGES: Record<LabelConflictReason, string> = {
  unknown_lease: "no such lease: it was never handed out, was skipped or was already used",
  expired_lease: "the lease expired and the comparison went back to the queue",
  foreign_lease: "the lease belongs to another annotator",
  already_labelled: "this annotator already labelled this comparison",
  lease_in_use: "a pick for this lease is already being saved",
};

/** A pick or skip that cannot be taken; nothing was changed. */
export class LabelConflictError extends Error {
  override readonly name = "LabelConflictError";
  constructor(
    readonly reason: LabelConflictReason,
    detail?: string,
  ) {
    super(detail === undefined ? MESSAGES[reason] : `${MESSAGES[reason]} (${detail})`);
  }
}

/** A label file that holds something other than label records, other than a torn last line. */
export class LabelFileError extends Error {
  override readonly name = "LabelFileError";
  constructor(
    readonly file: string,
    readonly line: number,
    reason: string,
  ) {
    super(`${file}:${line}: ${reason}; fix or move the file, pbrl will not overwrite complete lines`);
  }
}

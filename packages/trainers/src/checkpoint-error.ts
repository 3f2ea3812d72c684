/** A training checkpoint that is missing, damaged, or does not belong to this run. */
export class CheckpointError extends Error {
  override name = "CheckpointError";
}

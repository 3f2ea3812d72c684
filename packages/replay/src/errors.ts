/** A replay buffer misused or its files unusable; the message names the option or the file. */
export class ReplayError extends Error {
  override name = "ReplayError";
}

/**
 * A NaN or ±∞ where a loss, gradient, log-prob, margin or return must be finite. Training stops
 * with it (nothing is skipped or replaced); the message names the agent, batch and round. One
 * class for every algorithm, so one `instanceof` catches them all.
 */
export class NonFiniteError extends Error {
  override name = "NonFiniteError";
}

import type { RngStream } from "@pbrl/core-tensor";
import { ReplayError } from "./errors.js";

/**
 * Assigns each of `total` draws to a dataset by weight, as i.i.d. categorical draws from the
 * stream (the seed's semantics), and returns the number of draws per dataset.
 */
export function allocateDraws(weights: readonly number[], total: number, rng: RngStream): number[] {
  if (!Number.isSafeInteger(total) || total < 0) throw new ReplayError(`number of draws must be a non-negative integer, got ${total}`);
  const counts = weights.map(() => 0);
  for (let i = 0; i < total; i++) counts[rng.weightedIndex(weights)]! += 1;
  return counts;
}

import type { ReplayIndexEntry } from "@pbrl/preference-data";

/**
 * The sample size when none is configured: this round's pair count, or, for an empty round, the
 * newest non-empty dataset's size, so a round without new pairs still trains on replay.
 */
export function defaultSampleSize(currentPairs: number, entries: readonly ReplayIndexEntry[]): number {
  if (currentPairs > 0) return currentPairs;
  for (let i = entries.length - 1; i >= 0; i--) {
    const n = entries[i]!.num_pairs;
    if (n > 0) return n;
  }
  return 0;
}

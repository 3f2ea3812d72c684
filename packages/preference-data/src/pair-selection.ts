import type { RngStream } from "@pbrl/core-tensor";

export const PAIR_SELECTION_MODES = ["reward_gap", "all", "random"] as const;
export type PairSelectionMode = (typeof PAIR_SELECTION_MODES)[number];

/** (winner, loser) candidate indices. */
export type IndexPair = [winner: number, loser: number];

/**
 * Every non-tied pair of candidates, the higher reward as winner, enumerated with the winner
 * index ascending, then the loser index ascending. Ties never form a pair.
 */
export function nonTiedPairs(rewards: readonly number[]): { pair: IndexPair; gap: number }[] {
  const out: { pair: IndexPair; gap: number }[] = [];
  // a positive gap is never a candidate against itself
  rewards.forEach((ri, i) =>
    rewards.forEach((rj, j) => {
      if (ri - rj > 0) out.push({ pair: [i, j], gap: ri - rj });
    }),
  );
  return out;
}

/**
 * Which pairs an item keeps.
 * - `reward_gap`: largest reward gap first (equal gaps keep enumeration order), first `limit`;
 * - `all`: every non-tied pair in enumeration order (`limit` must be null);
 * - `random`: a seeded shuffle, first `limit`.
 */
export function selectPairs(rewards: readonly number[], mode: PairSelectionMode, limit: number | null, rng?: RngStream): IndexPair[] {
  const candidates = nonTiedPairs(rewards);
  switch (mode) {
    case "all":
      if (limit !== null) throw new RangeError("pair_selection=all keeps every non-tied pair: preference_pairs_per_sample must be null");
      return candidates.map((c) => c.pair);
    case "reward_gap": {
      // Array.prototype.sort is stable: equal gaps keep enumeration order
      const sorted = [...candidates].sort((a, b) => b.gap - a.gap);
      return sorted.slice(0, limit ?? sorted.length).map((c) => c.pair);
    }
    case "random": {
      if (rng === undefined) throw new Error("pair_selection=random needs a seeded RngStream");
      const shuffled = rng.shuffle(candidates.map((c) => c.pair));
      return shuffled.slice(0, limit ?? shuffled.length);
    }
  }
}

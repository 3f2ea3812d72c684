import type { RngStream } from "@pbrl/core-tensor";

export const COMPARISON_SELECTION_MODES = ["reward_gap", "all", "random", "comparator_reward"] as const;
export type ComparisonSelectionMode = (typeof COMPARISON_SELECTION_MODES)[number];

/** One index-aligned comparison with a clear winner. */
export interface Comparison {
  /** Candidate index on both sides. */
  index: number;
  /** Which side won. */
  winner: "target" | "comparator";
  /** |target − comparator| reward. */
  gap: number;
  comparatorReward: number;
}

/**
 * Which comparisons of one item become pairs. Target candidate j is compared only with
 * comparator candidate j (indices present on both sides, both valid); ties never form pairs;
 * either side may win. Order:
 * - `comparator_reward`: strongest comparator sample first (comparator reward, then gap, descending);
 * - `reward_gap`: largest gap first; `all`: by index; `random`: a seeded shuffle.
 * All but `all` keep the first `limit` (null: no limit).
 */
export function selectComparisons(
  target: readonly number[],
  comparator: readonly number[],
  valid: { target: readonly boolean[]; comparator: readonly boolean[] },
  mode: ComparisonSelectionMode,
  limit: number | null,
  rng?: RngStream,
): Comparison[] {
  const out: Comparison[] = [];
  const n = Math.min(target.length, comparator.length);
  for (let j = 0; j < n; j++) {
    if (valid.target[j] === false || valid.comparator[j] === false) continue;
    const gap = target[j]! - comparator[j]!;
    if (gap === 0) continue;
    // Stryker disable next-line EqualityOperator: gap is never 0 here, so > and >= agree
    out.push({ index: j, winner: gap > 0 ? "target" : "comparator", gap: Math.abs(gap), comparatorReward: comparator[j]! });
  }
  switch (mode) {
    case "all":
      if (limit !== null) throw new RangeError("pair_selection=all keeps every comparison: preference_pairs_per_sample must be null");
      return out;
    // Array.prototype.sort is stable: what ties on every key stays in index order
    case "comparator_reward":
      out.sort((a, b) => b.comparatorReward - a.comparatorReward || b.gap - a.gap);
      break;
    case "reward_gap":
      out.sort((a, b) => b.gap - a.gap);
      break;
    case "random":
      if (rng === undefined) throw new Error("pair_selection=random needs a seeded RngStream");
      rng.shuffle(out);
      break;
  }
  return out.slice(0, limit ?? out.length);
}

/** How a person's comparisons of one item are chosen: no reward orders them, so by index or shuffled. */
export type OpenComparisonOrder = "index" | "random";

/**
 * The candidate indices of one item to put to people: index-aligned candidates valid on both
 * sides (a person may judge what a reward would call a tie), the first `limit` of them by index
 * or in a seeded shuffle.
 */
export function selectOpenComparisons(
  valid: { target: readonly boolean[]; comparator: readonly boolean[] },
  order: OpenComparisonOrder,
  limit: number,
  rng?: RngStream,
): number[] {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`comparisons per item must be an integer ≥ 1, got ${limit}`);
  const open: number[] = [];
  valid.target.forEach((ok, j) => {
    if (ok && valid.comparator[j] === true) open.push(j);
  });
  if (order === "random") {
    if (rng === undefined) throw new Error("a random order of comparisons needs a seeded RngStream");
    rng.shuffle(open);
  }
  return open.slice(0, limit);
}

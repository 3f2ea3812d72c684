/**
 * Per-round reward distributions of target and comparator samples, in CoMLRL's layout
 * (`reward_distributions/iteration_NNNN.json`): 16 bins with 17 evenly spaced edges over the
 * reward range, values clipped into it, each bin [a, b) except the last, which includes b.
 */
import { binEdges as reportBinEdges, histogram } from "@pbrl/report";
import { meanOrNull } from "@pbrl/core-tensor";

export const NUM_BINS = 16;

export interface RewardSeries {
  sample_count: number;
  mean: number | null;
  counts: number[];
  raw_rewards: number[];
}

export interface RewardDistributionFile {
  iteration: number;
  reward_min: number;
  reward_max: number;
  num_bins: number;
  bin_edges: number[];
  bin_centers: number[];
  candidate: { target: RewardSeries; comparator: RewardSeries };
  selected: { target: RewardSeries; comparator: RewardSeries };
}

/** 17 evenly spaced edges over [lo, hi] (report's binEdges, which the report's shared bins use too), for a valid range. */
export function binEdges(lo: number, hi: number, bins = NUM_BINS): number[] {
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && lo < hi)) throw new RangeError(`reward range must be finite with min < max, got [${lo}, ${hi}]`);
  return reportBinEdges(lo, hi, bins);
}

export { histogram };

export function series(values: readonly number[], edges: readonly number[]): RewardSeries {
  const finite = values.filter(Number.isFinite);
  return {
    sample_count: finite.length,
    mean: meanOrNull(finite),
    counts: histogram(finite, edges),
    raw_rewards: finite,
  };
}

/**
 * The declared raw reward range log_reward_distribution bins over, as CoMLRL requires it: two
 * finite numbers, min < max. Returns a message naming what is wrong, or the range.
 */
export function declaredRewardRange(value: unknown): [number, number] | string {
  if (value === undefined || value === null)
    return "needs the reward function's declared raw reward range, reward_func.reward_range = [min, max] (attach it to the function: Object.assign(rewardFunc, { reward_range: [0, 1] }), or pass the trainer's rewardRange option), so every round's histogram uses the same bins";
  if (!Array.isArray(value) || value.length !== 2 || !value.every((v) => typeof v === "number" && Number.isFinite(v)) || !(value[0] < value[1])) {
    return `reward_func.reward_range must be [min, max] with finite numbers and min < max, got ${JSON.stringify(value)}`;
  }
  return [value[0], value[1]];
}

export function distributionFile(
  round: number,
  range: readonly [number, number],
  candidate: { target: readonly number[]; comparator: readonly number[] },
  selected: { target: readonly number[]; comparator: readonly number[] },
): RewardDistributionFile {
  const edges = binEdges(range[0], range[1]);
  return {
    iteration: round,
    reward_min: range[0],
    reward_max: range[1],
    num_bins: NUM_BINS,
    bin_edges: edges,
    bin_centers: edges.slice(0, -1).map((e, i) => (e + edges[i + 1]!) / 2),
    candidate: { target: series(candidate.target, edges), comparator: series(candidate.comparator, edges) },
    selected: { target: series(selected.target, edges), comparator: series(selected.comparator, edges) },
  };
}

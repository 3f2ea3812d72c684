/**
 * Per-round reward distributions of target and comparator samples, in CoMLRL's layout
 * (`reward_distributions/iteration_NNNN.json`): 16 bins with 17 evenly spaced edges over the
 * reward range, values clipped into it, each bin [a, b) except the last, which includes b.
 */
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

export function binEdges(lo: number, hi: number, bins = NUM_BINS): number[] {
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && lo < hi)) throw new RangeError(`reward range must be finite with min < max, got [${lo}, ${hi}]`);
  return Array.from({ length: bins + 1 }, (_, i) => (i === bins ? hi : lo + ((hi - lo) * i) / bins));
}

/** Counts per bin of the finite values, clipped into [lo, hi]. */
export function histogram(values: readonly number[], edges: readonly number[]): number[] {
  const bins = edges.length - 1;
  const lo = edges[0]!;
  const hi = edges[bins]!;
  const counts = new Array<number>(bins).fill(0);
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    const x = Math.min(hi, Math.max(lo, v));
    let b = bins - 1;
    for (let i = 0; i < bins; i++) {
      if (x < edges[i + 1]!) {
        b = i;
        break;
      }
    }
    counts[b]! += 1;
  }
  return counts;
}

export function series(values: readonly number[], edges: readonly number[]): RewardSeries {
  const finite = values.filter(Number.isFinite);
  return {
    sample_count: finite.length,
    mean: finite.length === 0 ? null : finite.reduce((a, b) => a + b, 0) / finite.length,
    counts: histogram(finite, edges),
    raw_rewards: finite,
  };
}

/**
 * The range the histograms use: the one the reward function declares (`reward_range`, as in
 * CoMLRL), else the observed range of the round (widened by 0.5 each side when all values are
 * equal).
 */
export function rewardRange(declared: readonly [number, number] | undefined, values: readonly number[]): [number, number] {
  if (declared !== undefined) return [declared[0], declared[1]];
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return [0, 1];
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  return lo < hi ? [lo, hi] : [lo - 0.5, hi + 0.5];
}

export function distributionFile(
  iteration: number,
  range: readonly [number, number],
  candidate: { target: readonly number[]; comparator: readonly number[] },
  selected: { target: readonly number[]; comparator: readonly number[] },
): RewardDistributionFile {
  const edges = binEdges(range[0], range[1]);
  return {
    iteration,
    reward_min: range[0],
    reward_max: range[1],
    num_bins: NUM_BINS,
    bin_edges: edges,
    bin_centers: edges.slice(0, -1).map((e, i) => (e + edges[i + 1]!) / 2),
    candidate: { target: series(candidate.target, edges), comparator: series(candidate.comparator, edges) },
    selected: { target: series(selected.target, edges), comparator: series(selected.comparator, edges) },
  };
}

/**
 * Reward histograms on the same bins across rounds, so rounds can be compared bar for bar. Each
 * round's file has its own range (the reward function's declared one, else that round's observed
 * one); the report re-bins the raw values into one shared range, with the trainers' binning rule
 * (evenly spaced edges, values clipped into the range, each bin [a, b) except the last, [a, b]).
 */
import type { RewardDistribution, RewardSeries } from "./read/distribution-file.js";

export interface SharedBins {
  edges: number[];
  /**
   * Where the range comes from: every round's file has the same range ("common": the reward
   * function's declared range, or rounds that happened to agree), the raw values of all rounds
   * ("raw"), or the union of the rounds' recorded ranges when some file has no raw values
   * ("recorded").
   */
  source: "common" | "raw" | "recorded";
}

/** `bins` evenly spaced bins over [lo, hi]: bins + 1 edges, the last exactly hi (as the trainers compute them). */
export function binEdges(lo: number, hi: number, bins: number): number[] {
  return Array.from({ length: bins + 1 }, (_, i) => (i === bins ? hi : lo + ((hi - lo) * i) / bins));
}

/** Counts per bin of the finite values, clipped into the edges' range (the trainers' rule). */
export function histogram(values: readonly number[], edges: readonly number[], weights?: readonly number[]): number[] {
  const bins = edges.length - 1;
  const lo = edges[0]!;
  const hi = edges[bins]!;
  const counts = new Array<number>(bins).fill(0);
  values.forEach((v, k) => {
    if (!Number.isFinite(v)) return;
    const x = Math.min(hi, Math.max(lo, v));
    let b = bins - 1;
    for (let i = 0; i < bins; i++) {
      if (x < edges[i + 1]!) {
        b = i;
        break;
      }
    }
    counts[b]! += weights?.[k] ?? 1;
  });
  return counts;
}

function seriesOf(file: RewardDistribution): RewardSeries[] {
  return [file.candidate.target, file.candidate.comparator, ...(file.selected === undefined ? [] : [file.selected.target, file.selected.comparator])];
}

/** Raw values are usable when the file kept all of them. */
function hasRaw(s: RewardSeries): s is RewardSeries & { raw_rewards: number[] } {
  return s.raw_rewards !== undefined && s.raw_rewards.length === s.sample_count;
}

/** The bins every round is drawn on; null when there are no files. */
export function sharedBins(files: readonly RewardDistribution[]): SharedBins | null {
  const first = files[0];
  if (first === undefined) return null;
  const bins = first.num_bins;
  if (files.every((f) => f.reward_min === first.reward_min && f.reward_max === first.reward_max)) {
    return { edges: binEdges(first.reward_min, first.reward_max, bins), source: "common" };
  }
  if (files.every((f) => seriesOf(f).every(hasRaw))) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const f of files) {
      for (const s of seriesOf(f)) {
        for (const v of s.raw_rewards ?? []) {
          if (!Number.isFinite(v)) continue;
          lo = Math.min(lo, v);
          hi = Math.max(hi, v);
        }
      }
    }
    if (lo < hi) return { edges: binEdges(lo, hi, bins), source: "raw" };
    if (lo === hi) return { edges: binEdges(lo - 0.5, hi + 0.5, bins), source: "raw" };
  }
  const lo = Math.min(...files.map((f) => f.reward_min));
  const hi = Math.max(...files.map((f) => f.reward_max));
  return { edges: binEdges(lo, hi, bins), source: "recorded" };
}

function sameEdges(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * A series' counts on `edges`: its own counts when the bins are the same, its raw values
 * re-binned when it has them, else its counts moved to the bins holding their bin centres
 * (`approximate`).
 */
export function rebin(series: RewardSeries, file: RewardDistribution, edges: readonly number[]): { counts: number[]; approximate: boolean } {
  if (sameEdges(file.bin_edges, edges)) return { counts: [...series.counts], approximate: false };
  if (hasRaw(series)) return { counts: histogram(series.raw_rewards, edges), approximate: false };
  const centers = file.bin_edges.slice(0, -1).map((e, i) => (e + file.bin_edges[i + 1]!) / 2);
  return { counts: histogram(centers, edges, series.counts), approximate: true };
}

export interface RoundHistograms {
  iteration: number;
  edges: number[];
  candidate: { target: number[]; comparator: number[] };
  selected: { target: number[]; comparator: number[] } | null;
  /** Some counts were moved by bin centre (a file without raw values on other bins). */
  approximate: boolean;
}

/** One round's four series on `edges` (default: the file's own bins). */
export function roundHistograms(file: RewardDistribution, edges: readonly number[] = file.bin_edges): RoundHistograms {
  let approximate = false;
  const on = (s: RewardSeries) => {
    const r = rebin(s, file, edges);
    approximate ||= r.approximate;
    return r.counts;
  };
  return {
    iteration: file.iteration,
    edges: [...edges],
    candidate: { target: on(file.candidate.target), comparator: on(file.candidate.comparator) },
    selected: file.selected === undefined ? null : { target: on(file.selected.target), comparator: on(file.selected.comparator) },
    approximate,
  };
}

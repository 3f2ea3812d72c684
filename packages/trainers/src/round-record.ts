/**
 * What an iterative round leaves besides its round file: its summary, the per-round metrics line,
 * and with log_reward_distribution the target-vs-comparator reward histograms (JSON and SVG, and
 * TensorBoard histograms with report_to="tensorboard"), plus a few of its pairs as TensorBoard text.
 */
import * as path from "node:path";
import { meanOrNull, writeFileAtomic } from "@pbrl/core-tensor";
import { roundFileName, type CollectedPair, type CompareResult, type ReplayState } from "@pbrl/preference-data";
import { rewardDistributionSvg } from "@pbrl/report";
import type { MetricsLog } from "./metrics-log.js";
import { distributionFile, NUM_BINS } from "./reward-distribution.js";
import { pairsMarkdown, type TensorBoardLog } from "./tensorboard-log.js";

export interface RoundSummary {
  round: number;
  pairs: number;
  trainPairs: number;
  comparatorWinRate: number | null;
  invalidCandidates: { target: number; comparator: number };
  targetRewardMean: number | null;
  comparatorRewardMean: number | null;
}

export function roundSummary(round: number, collected: CompareResult, train: readonly CollectedPair[]): RoundSummary {
  const wins = collected.wins.target + collected.wins.comparator;
  return {
    round,
    pairs: collected.pairs.length,
    trainPairs: train.length,
    comparatorWinRate: wins === 0 ? null : collected.wins.comparator / wins,
    invalidCandidates: collected.invalid,
    targetRewardMean: meanOrNull(collected.rawRewards.target),
    comparatorRewardMean: meanOrNull(collected.rawRewards.comparator),
  };
}

/** Writes the round's distributions (when a range is declared), TensorBoard extras and metrics line. */
export async function recordRound(o: {
  summary: RoundSummary;
  collected: CompareResult;
  train: readonly CollectedPair[];
  replay: ReplayState;
  step: number;
  metrics: MetricsLog;
  tensorboard: TensorBoardLog | undefined;
  /** log_reward_distribution's declared raw reward range; undefined: no distributions. */
  distributionRange: [number, number] | undefined;
  distDir: string;
  /** More fields of the round's metrics line (how people labelled it). */
  extra?: Record<string, number>;
}): Promise<void> {
  const { summary, collected, train, tensorboard } = o;
  const round = summary.round;
  if (o.distributionRange !== undefined) {
    const selected = {
      target: train.flatMap((p) => (typeof p.record.target_raw_reward === "number" ? [p.record.target_raw_reward] : [])),
      comparator: train.flatMap((p) => (typeof p.record.comparator_raw_reward === "number" ? [p.record.comparator_raw_reward] : [])),
    };
    const dist = distributionFile(round, o.distributionRange, collected.rawRewards, selected);
    await writeFileAtomic(path.join(o.distDir, roundFileName(round)), JSON.stringify(dist, null, 2) + "\n");
    // CoMLRL's per-round plot: target vs comparator, all candidates and the selected pairs
    await writeFileAtomic(path.join(o.distDir, roundFileName(round).replace(/\.json$/, ".svg")), rewardDistributionSvg(dist));
    for (const side of ["target", "comparator"] as const)
      tensorboard?.histogram(o.step, `reward_distribution/${side}`, collected.rawRewards[side], o.distributionRange, NUM_BINS);
  }
  tensorboard?.text(o.step, "samples/round_pairs", pairsMarkdown(collected.pairs.map((p) => p.record)));
  o.metrics.write({
    kind: "round",
    step: o.step,
    "iter/current_iteration": round,
    "iter/current_preference_pairs": summary.pairs,
    "iter/total_preference_pairs": o.replay.entries.reduce((s, e) => s + e.num_pairs, 0),
    "iter/train_preference_pairs": summary.trainPairs,
    "iter/replayed_train_pairs": replayedCount(train, collected.pairs),
    "iter/comparator_win_rate": summary.comparatorWinRate ?? Number.NaN,
    "iter/invalid_target_candidates": collected.invalid.target,
    "iter/invalid_comparator_candidates": collected.invalid.comparator,
    "iter/target_reward_mean": summary.targetRewardMean ?? Number.NaN,
    "iter/comparator_reward_mean": summary.comparatorRewardMean ?? Number.NaN,
    ...o.extra,
  });
}

/** Training pairs that come from earlier rounds (the replay buffer reads pairs back from files, so they are matched by content). */
function replayedCount(train: readonly CollectedPair[], current: readonly CollectedPair[]): number {
  const key = (p: CollectedPair) => JSON.stringify([p.record.prompts, p.record.winner_completions, p.record.loser_completions]);
  const fresh = new Set(current.map(key));
  return train.filter((p) => !fresh.has(key(p))).length;
}

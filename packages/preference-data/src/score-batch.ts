import pLimit from "p-limit";
import { scoreJointCandidates, type ScoredCandidates } from "./reward.js";
import type { RewardContext, RewardFunc, RewardProcessor } from "./types.js";

/** One oracle call: an item's joint candidates, `completions[agent][candidate]`. */
export interface RewardJob {
  completions: string[][];
  context: RewardContext;
  /** Which candidates these are, for messages (e.g. "comparator side"). */
  label?: string;
}

export interface ScoreBatchOptions {
  rewardProcessor?: RewardProcessor | undefined;
  /** reward_concurrency: oracle calls in flight at once. */
  concurrency: number;
  /** reward_timeout_s: seconds one asynchronous call may take; null: no limit; default 300. */
  rewardTimeoutS?: number | null | undefined;
}

/**
 * Scores every job, at most `concurrency` calls at once, results in job order. The first failure
 * (an error, a bad value, a timeout) fails the batch at once: calls not yet started never reach
 * the oracle, and the ones in flight are no longer awaited, so no timer of theirs keeps the
 * process up after the error.
 */
export async function scoreRewardJobs(rewardFunc: RewardFunc, jobs: readonly RewardJob[], o: ScoreBatchOptions): Promise<ScoredCandidates[]> {
  const limit = pLimit(Math.max(1, Math.floor(o.concurrency)));
  const stop = new AbortController();
  const run = async (job: RewardJob): Promise<ScoredCandidates> => {
    try {
      return await scoreJointCandidates(rewardFunc, job.completions, job.context, o.rewardProcessor, {
        timeoutS: o.rewardTimeoutS,
        signal: stop.signal,
        label: job.label,
      });
    } catch (err) {
      // Aborting here, before the limiter starts its next call, keeps that call from reaching the oracle.
      if (!stop.signal.aborted) stop.abort(err);
      throw err;
    }
  };
  try {
    return await Promise.all(jobs.map((job) => limit(() => run(job))));
  } finally {
    limit.clearQueue();
  }
}

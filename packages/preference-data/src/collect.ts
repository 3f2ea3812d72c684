import { mean, type RngStream } from "@pbrl/core-tensor";
import { checkCollectionInput } from "./dataset.js";
import { formatAgentPrompts } from "./formatters.js";
import type { PairRecord } from "./pair-record.js";
import { selectPairs, type PairSelectionMode } from "./pair-selection.js";
import { emptyTally, tallyTruncation, warnTruncation, type TruncationTally } from "./prompt-length.js";
import { promptTexts, type CandidateSampler } from "./sampler.js";
import { scoreRewardJobs } from "./score-batch.js";
import type { Formatter, RewardFunc, RewardProcessor, TaskItem } from "./types.js";

/** The token ids behind one agent's side of a pair, exactly as generated (and so as scored). */
export interface AgentPairTokens {
  promptIds: number[];
  winnerIds: number[];
  loserIds: number[];
}

/** A pair in memory: the record as written to disk, plus the tokens that produced it. */
export interface CollectedPair {
  record: PairRecord;
  tokens: AgentPairTokens[];
  itemIndex: number;
}

/** What every round's collection takes, whether its pairs come from one side or from two. */
export interface RoundCollectionOptions {
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  /** The current agents. */
  sampler: CandidateSampler;
  rewardFunc: RewardFunc;
  rewardProcessor?: RewardProcessor | undefined;
  /** preference_num_candidates: samples per agent per item (the target side). */
  numCandidates: number;
  /** preference_pairs_per_sample; null keeps every selected pair. */
  pairsPerSample: number | null;
  /** Stream for pair_selection=random. */
  selectionRng: RngStream;
  /** Oracle calls in flight at once (items are independent). */
  rewardConcurrency: number;
  /** Items whose candidates are generated in one batch. */
  itemsPerBatch: number;
  /** Called after each batch of items with the number of items done. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Whether joint candidate j (its text per agent) can be used; invalid candidates (e.g. a joint
   * completion that could not be split into roles) are counted and never form pairs.
   */
  isValid?: CandidateCheck | undefined;
  /** reward_timeout_s: seconds one asynchronous reward_func call may take; null: no limit; default 300. */
  rewardTimeoutS?: number | null | undefined;
  /** Receives this call's warnings (prompts cut by max_prompt_length: one message with the count); default console.warn. */
  onWarning?: ((message: string) => void) | undefined;
}

export interface CollectOptions extends RoundCollectionOptions {
  pairSelection: PairSelectionMode;
}

/** Decides whether a joint candidate (one text per agent) is usable. */
export type CandidateCheck = (texts: readonly string[], item: TaskItem) => boolean;

export interface CollectResult {
  pairs: CollectedPair[];
  /** Processed rewards of the valid joint candidates, per item. */
  candidateRewards: number[][];
  /** Items that produced at least one pair. */
  itemsWithPairs: number;
  /** Joint candidates rejected by `isValid`. */
  invalidCandidates: number;
}

/**
 * Collects preference pairs from the agents' own samples: K candidates per agent per item,
 * joint by candidate index, one oracle call per item for all K, non-tied pairs chosen by
 * pair_selection. Items are processed in dataset order and the result does not depend on
 * how many oracle calls overlap.
 */
export async function collectPreferencePairs(o: CollectOptions): Promise<CollectResult> {
  checkCollectionInput(o, "preference pairs");
  const tally = emptyTally();
  try {
    return await collectBatches(o, tally);
  } finally {
    warnTruncation(tally, o.onWarning);
  }
}

async function collectBatches(o: CollectOptions, tally: TruncationTally): Promise<CollectResult> {
  const result: CollectResult = { pairs: [], candidateRewards: [], itemsWithPairs: 0, invalidCandidates: 0 };
  for (let start = 0; start < o.items.length; start += o.itemsPerBatch) {
    const items = o.items.slice(start, start + o.itemsPerBatch);
    const indices = items.map((_, k) => start + k);
    const formatted = items.map((item, k) => formatAgentPrompts(o.formatters, item, indices[k]!));
    const samples = await o.sampler.sample(formatted, o.numCandidates, indices);
    tallyTruncation(tally, samples);
    // Rewards and records get each agent's prompt as text: chat messages as its template rendered them.
    const prompts = promptTexts(formatted, samples, indices);
    const scored = await scoreRewardJobs(
      o.rewardFunc,
      items.map((item, k) => ({ completions: samples[k]!.map((agent) => [...agent.texts]), context: { item, itemIndex: indices[k]!, prompts: prompts[k]! } })),
      { rewardProcessor: o.rewardProcessor, concurrency: o.rewardConcurrency, rewardTimeoutS: o.rewardTimeoutS },
    );
    // Selection runs in item order after scoring, so the random stream is consumed identically
    // whatever order the oracle calls finished in.
    items.forEach((item, k) => {
      const { processed } = scored[k]!;
      const agents = samples[k]!;
      // Invalid candidates drop out before selection; `valid` maps back to candidate indices.
      const valid = processed
        .map((_, j) => j)
        .filter(
          (j) =>
            o.isValid?.(
              agents.map((a) => a.texts[j]!),
              item,
            ) ?? true,
        );
      result.invalidCandidates += processed.length - valid.length;
      const rewards = valid.map((j) => processed[j]!);
      const candidateMean = mean(rewards);
      result.candidateRewards.push(rewards);
      const chosen = selectPairs(rewards, o.pairSelection, o.pairsPerSample, o.selectionRng).map(([w, l]) => [valid[w]!, valid[l]!] as const);
      if (chosen.length > 0) result.itemsWithPairs += 1;
      for (const [w, l] of chosen) {
        result.pairs.push({
          itemIndex: start + k,
          record: {
            prompts: [...prompts[k]!],
            winner_completions: agents.map((a) => a.texts[w]!),
            loser_completions: agents.map((a) => a.texts[l]!),
            winner_reward: processed[w]!,
            loser_reward: processed[l]!,
            candidate_reward_mean: candidateMean,
            prompt_token_ids: agents.map((a) => a.promptIds),
            winner_token_ids: agents.map((a) => a.tokens[w]!),
            loser_token_ids: agents.map((a) => a.tokens[l]!),
          },
          tokens: agents.map((a) => ({ promptIds: a.promptIds, winnerIds: a.tokens[w]!, loserIds: a.tokens[l]! })),
        });
      }
    });
    o.onProgress?.(Math.min(start + o.itemsPerBatch, o.items.length), o.items.length);
  }
  return result;
}

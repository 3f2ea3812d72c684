import { mean } from "@pbrl/core-tensor";
import type { CollectedPair, RoundCollectionOptions } from "./collect.js";
import { selectComparisons, type ComparisonSelectionMode } from "./comparison-selection.js";
import { checkCollectionInput } from "./dataset.js";
import { renderPrompt } from "./chat.js";
import { formatAgentPrompts, isChatPrompt } from "./formatters.js";
import type { CandidateSet, Comparator } from "./interfaces.js";
import { emptyTally, tallyTruncation, warnTruncation, type TruncationTally } from "./prompt-length.js";
import { candidateTokens, type AgentTokenizing } from "./retokenize.js";
import { scoreRewardJobs, type RewardJob } from "./score-batch.js";

export interface CompareOptions extends RoundCollectionOptions {
  /** How each agent tokenizes texts that come without ids (comparator samples). */
  agents: readonly AgentTokenizing[];
  comparator: Comparator;
  /** comparator_num_candidates (comparator side). */
  comparatorNumCandidates: number;
  pairSelection: ComparisonSelectionMode;
}

export interface CompareResult {
  pairs: CollectedPair[];
  /** Raw rewards of every valid candidate of the round, per side. */
  rawRewards: { target: number[]; comparator: number[] };
  /** Candidates that could not be used (unparseable joint completions), per side. */
  invalid: { target: number; comparator: number };
  /** Index-aligned comparisons with a winner, by winning side. */
  wins: { target: number; comparator: number };
  itemsWithPairs: number;
}

function tokenizerOf(agents: readonly AgentTokenizing[], a: number): AgentTokenizing["tokenizer"] {
  const agent = agents[a];
  if (agent === undefined) throw new RangeError(`no tokenizer for agent ${a}: agents has ${agents.length} entries`);
  return agent.tokenizer;
}

function fromSamples(samples: { tokens: number[][]; texts: string[] }[]): CandidateSet {
  return { texts: samples.map((a) => a.texts), tokens: samples.map((a) => a.tokens), valid: samples[0]!.texts.map(() => true) };
}

/**
 * One round of iterative collection: the current agents and the comparator answer the same
 * items, the oracle scores each side's joint candidates, and every index-aligned comparison
 * with a clear winner is a candidate pair — whichever side wins.
 */
export async function collectComparisons(o: CompareOptions): Promise<CompareResult> {
  checkCollectionInput(o, "comparisons");
  const tally = emptyTally();
  try {
    return await compareBatches(o, tally);
  } finally {
    warnTruncation(tally, o.onWarning);
  }
}

async function compareBatches(o: CompareOptions, tally: TruncationTally): Promise<CompareResult> {
  const result: CompareResult = {
    pairs: [],
    rawRewards: { target: [], comparator: [] },
    invalid: { target: 0, comparator: 0 },
    wins: { target: 0, comparator: 0 },
    itemsWithPairs: 0,
  };
  for (let start = 0; start < o.items.length; start += o.itemsPerBatch) {
    const items = o.items.slice(start, start + o.itemsPerBatch);
    const indices = items.map((_, k) => start + k);
    const formatted = items.map((item, k) => formatAgentPrompts(o.formatters, item, indices[k]!));
    // Each agent's prompt as text (chat messages rendered with the agent's template): what the
    // comparator answers (it takes text), the rewards receive and the records store.
    const prompts = formatted.map((agents, k) =>
      agents.map((p, a) => (isChatPrompt(p) ? renderPrompt(tokenizerOf(o.agents, a), p, { agent: a, itemIndex: indices[k]!, item: items[k]! }) : p)),
    );
    // Both sides at once: agents generating in worker threads overlap with a comparator that
    // generates in this thread or waits on an API (each side draws from its own stream).
    const [targetSamples, comparator] = await Promise.all([
      o.sampler.sample(formatted, o.numCandidates, indices),
      o.comparator.sample(items, prompts, o.comparatorNumCandidates),
    ]);
    tallyTruncation(tally, targetSamples);
    const target = targetSamples.map(fromSamples);
    if (comparator.length !== items.length)
      throw new Error(`comparator ${o.comparator.description} returned ${comparator.length} candidate sets for ${items.length} items`);
    const job = (set: CandidateSet, k: number, label: string): RewardJob => ({
      completions: set.texts.map((t) => [...t]),
      context: { item: items[k]!, itemIndex: indices[k]!, prompts: prompts[k]! },
      label,
    });
    // Target and comparator jobs interleaved per item: results [2k] and [2k + 1].
    const jobs = items.flatMap((_, k) => [job(target[k]!, k, "agents' side"), job(comparator[k]!, k, "comparator side")]);
    const flat = await scoreRewardJobs(o.rewardFunc, jobs, {
      rewardProcessor: o.rewardProcessor,
      concurrency: o.rewardConcurrency,
      rewardTimeoutS: o.rewardTimeoutS,
    });
    const scored = items.map((_, k) => ({ target: flat[2 * k]!, comparator: flat[2 * k + 1]! }));
    items.forEach((item, k) => {
      const sides = { target: target[k]!, comparator: comparator[k]! };
      if (o.isValid !== undefined) {
        for (const side of [sides.target, sides.comparator])
          side.valid = side.valid.map(
            (ok, j) =>
              ok &&
              o.isValid!(
                side.texts.map((t) => t[j]!),
                item,
              ),
          );
      }
      const rewards = scored[k]!;
      const processedValid: number[] = [];
      for (const side of ["target", "comparator"] as const) {
        sides[side].valid.forEach((ok, j) => {
          if (!ok) {
            result.invalid[side] += 1;
            return;
          }
          result.rawRewards[side].push(rewards[side].raw[j]!);
          processedValid.push(rewards[side].processed[j]!);
        });
      }
      const candidateMean = mean(processedValid);
      const valid = { target: sides.target.valid, comparator: sides.comparator.valid };
      for (const c of selectComparisons(rewards.target.processed, rewards.comparator.processed, valid, "all", null)) result.wins[c.winner] += 1;
      const chosen = selectComparisons(rewards.target.processed, rewards.comparator.processed, valid, o.pairSelection, o.pairsPerSample, o.selectionRng);
      if (chosen.length > 0) result.itemsWithPairs += 1;
      for (const c of chosen) {
        const w = c.winner;
        const l = w === "target" ? "comparator" : "target";
        const j = c.index;
        const ids = (side: "target" | "comparator") =>
          o.agents.map((agent, a) => candidateTokens(sides[side].texts[a]![j]!, sides[side].tokens?.[a]?.[j], sides[side].stopped?.[a]?.[j], agent));
        const promptIds = targetSamples[k]!.map((a) => a.promptIds);
        const winnerIds = ids(w);
        const loserIds = ids(l);
        result.pairs.push({
          itemIndex: start + k,
          record: {
            prompts: [...prompts[k]!],
            winner_completions: sides[w].texts.map((t) => t[j]!),
            loser_completions: sides[l].texts.map((t) => t[j]!),
            winner_reward: rewards[w].processed[j]!,
            loser_reward: rewards[l].processed[j]!,
            candidate_reward_mean: candidateMean,
            raw_rewards: [rewards[w].raw[j]!, rewards[l].raw[j]!],
            target_raw_reward: rewards.target.raw[j]!,
            comparator_raw_reward: rewards.comparator.raw[j]!,
            prompt_token_ids: promptIds,
            winner_token_ids: winnerIds,
            loser_token_ids: loserIds,
          },
          tokens: o.agents.map((_, a) => ({ promptIds: promptIds[a]!, winnerIds: winnerIds[a]!, loserIds: loserIds[a]! })),
        });
      }
    });
    o.onProgress?.(Math.min(start + o.itemsPerBatch, o.items.length), o.items.length);
  }
  return result;
}

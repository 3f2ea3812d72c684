import { mean } from "@pbrl/core-tensor";
import type { CollectedPair, RoundCollectionOptions } from "./collect.js";
import { selectComparisons, type ComparisonSelectionMode } from "./comparison-selection.js";
import { checkCollectionInput } from "./dataset.js";
import { renderPrompt } from "./chat.js";
import { formatAgentPrompts, isChatPrompt } from "./formatters.js";
import type { CandidateSet, Comparator } from "./interfaces.js";
import { emptyTally, tallyTruncation, warnTruncation, type TruncationTally } from "./prompt-length.js";
import type { ScoredCandidates } from "./reward.js";
import { candidateTokens, type AgentTokenizing } from "./retokenize.js";
import { scoreRewardJobs, type RewardJob } from "./score-batch.js";
import type { RewardFunc, TaskItem } from "./types.js";

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
    const batch = await sampleBothSides(o, start, tally);
    const scored = await scoreBothSides(o.rewardFunc, batch, o);
    batch.sides.forEach((sides, k) => {
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
      // Stryker disable next-line StringLiteral: every mode's order holds the same comparisons without a limit, so the count is the same
      for (const c of selectComparisons(rewards.target.processed, rewards.comparator.processed, valid, "all", null)) result.wins[c.winner] += 1;
      const chosen = selectComparisons(rewards.target.processed, rewards.comparator.processed, valid, o.pairSelection, o.pairsPerSample, o.selectionRng);
      if (chosen.length > 0) result.itemsWithPairs += 1;
      for (const c of chosen) {
        const w = c.winner;
        const l = w === "target" ? "comparator" : "target";
        const j = c.index;
        result.pairs.push(
          pairOf(jointAnswers(o.agents, batch, k, j), w, {
            winner_reward: rewards[w].processed[j]!,
            loser_reward: rewards[l].processed[j]!,
            candidate_reward_mean: candidateMean,
            raw_rewards: [rewards[w].raw[j]!, rewards[l].raw[j]!],
            target_raw_reward: rewards.target.raw[j]!,
            comparator_raw_reward: rewards.comparator.raw[j]!,
          }),
        );
      }
    });
    o.onProgress?.(Math.min(start + o.itemsPerBatch, o.items.length), o.items.length);
  }
  return result;
}

/** What sampling both sides of a round takes: everything of a comparison round but its labelling. */
export type BothSidesOptions = Pick<
  CompareOptions,
  | "items"
  | "formatters"
  | "sampler"
  | "agents"
  | "comparator"
  | "numCandidates"
  | "comparatorNumCandidates"
  | "isValid"
  | "itemsPerBatch"
  | "onProgress"
  | "onWarning"
> &
  Partial<Pick<CompareOptions, "rewardProcessor" | "rewardConcurrency" | "rewardTimeoutS">>;

/** One batch of items answered by both sides, with `valid` already saying which candidates `isValid` accepts. */
export interface BothSidesBatch {
  items: readonly TaskItem[];
  /** Dataset index of each item. */
  indices: number[];
  /** prompts[item][agent] as text. */
  prompts: string[][];
  /** promptIds[item][agent]: the target side's prompt tokens (what training scores). */
  promptIds: number[][][];
  sides: { target: CandidateSet; comparator: CandidateSet }[];
}

/** Samples the batch of items starting at `start` from the agents and the comparator at once. */
export async function sampleBothSides(o: BothSidesOptions, start: number, tally: TruncationTally): Promise<BothSidesBatch> {
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
  if (comparator.length !== items.length)
    throw new Error(`comparator ${o.comparator.description} returned ${comparator.length} candidate sets for ${items.length} items`);
  const sides = items.map((item, k) => {
    const both = { target: fromSamples(targetSamples[k]!), comparator: comparator[k]! };
    if (o.isValid !== undefined)
      for (const side of [both.target, both.comparator])
        side.valid = side.valid.map(
          (ok, j) =>
            ok &&
            o.isValid!(
              side.texts.map((t) => t[j]!),
              item,
            ),
        );
    return both;
  });
  return { items, indices, prompts, promptIds: targetSamples.map((agents) => agents.map((a) => a.promptIds)), sides };
}

/** One oracle call per item and side, target and comparator jobs interleaved: the results of item k are [2k] and [2k + 1]. */
export async function scoreBothSides(
  rewardFunc: RewardFunc,
  batch: BothSidesBatch,
  o: Pick<CompareOptions, "rewardProcessor" | "rewardConcurrency" | "rewardTimeoutS">,
): Promise<{ target: ScoredCandidates; comparator: ScoredCandidates }[]> {
  const job = (set: CandidateSet, k: number, label: string): RewardJob => ({
    completions: set.texts.map((t) => [...t]),
    context: { item: batch.items[k]!, itemIndex: batch.indices[k]!, prompts: batch.prompts[k]! },
    label,
  });
  const jobs = batch.sides.flatMap((s, k) => [job(s.target, k, "agents' side"), job(s.comparator, k, "comparator side")]);
  const flat = await scoreRewardJobs(rewardFunc, jobs, {
    rewardProcessor: o.rewardProcessor,
    concurrency: o.rewardConcurrency,
    rewardTimeoutS: o.rewardTimeoutS,
  });
  return batch.sides.map((_, k) => ({ target: flat[2 * k]!, comparator: flat[2 * k + 1]! }));
}

/** Candidate `j` of item `k` on both sides: each agent's text and the token ids training will score. */
export interface JointAnswers {
  itemIndex: number;
  candidate: number;
  prompts: string[];
  promptIds: number[][];
  target: { texts: string[]; tokenIds: number[][] };
  comparator: { texts: string[]; tokenIds: number[][] };
}

export function jointAnswers(agents: readonly AgentTokenizing[], batch: BothSidesBatch, k: number, j: number): JointAnswers {
  const side = (name: "target" | "comparator") => {
    const set = batch.sides[k]![name];
    return {
      texts: set.texts.map((t) => t[j]!),
      // Stryker disable next-line OptionalChaining: a CandidateSet's tokens and stopped, when given, have every agent (interfaces.ts)
      tokenIds: agents.map((agent, a) => candidateTokens(set.texts[a]![j]!, set.tokens?.[a]?.[j], set.stopped?.[a]?.[j], agent)),
    };
  };
  return {
    itemIndex: batch.indices[k]!,
    candidate: j,
    prompts: [...batch.prompts[k]!],
    promptIds: batch.promptIds[k]!,
    target: side("target"),
    comparator: side("comparator"),
  };
}

/** The rewards a pair record carries besides its texts and tokens, and any fields of its own (who labelled it). */
export interface PairLabelFields {
  winner_reward: number;
  loser_reward: number;
  candidate_reward_mean: number;
  [field: string]: unknown;
}

/** The pair `winner` over the other side of `answers`. */
export function pairOf(answers: JointAnswers, winner: "target" | "comparator", fields: PairLabelFields): CollectedPair {
  const w = answers[winner];
  const l = answers[winner === "target" ? "comparator" : "target"];
  return {
    itemIndex: answers.itemIndex,
    record: {
      prompts: [...answers.prompts],
      winner_completions: [...w.texts],
      loser_completions: [...l.texts],
      ...fields,
      prompt_token_ids: answers.promptIds,
      winner_token_ids: w.tokenIds,
      loser_token_ids: l.tokenIds,
    },
    tokens: answers.promptIds.map((promptIds, a) => ({ promptIds, winnerIds: w.tokenIds[a]!, loserIds: l.tokenIds[a]! })),
  };
}

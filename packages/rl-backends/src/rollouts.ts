import pLimit from "p-limit";
import {
  formatAgentPrompts,
  promptTexts,
  scoreJointCandidates,
  type CandidateSampler,
  type Formatter,
  type RewardContext,
  type RewardProcessor,
  type TaskItem,
} from "@pbrl/preference-data";

/**
 * The joint reward of an item's G joint responses, one finite number per generation index:
 * the frozen reward model in MARLHF, or a task reward. `completions[agent][g]`.
 */
export type JointReward = (completions: string[][], context: RewardContext) => number[] | Promise<number[]>;

/** One item's on-policy samples: G responses per agent, joint by generation index, and their returns. */
export interface Rollout {
  /** Position of the item in its dataset (names it in errors). */
  itemIndex: number;
  item: TaskItem;
  /** Each agent's formatted prompt. */
  prompts: string[];
  /** Each agent's prompt tokens, `promptIds[agent]`. */
  promptIds: number[][];
  /** Exactly the generated tokens, `tokens[agent][g]`, the stop token (EOS) included when one ended the row. */
  tokens: number[][][];
  /** The decoded responses, `texts[agent][g]`. */
  texts: string[][];
  /** The G joint rewards (after the reward processor, when one is given). */
  rewards: number[];
  /**
   * The G joint returns, shared by every agent. Single turn (the only mode the trainers run):
   * undiscounted, so return = reward. Per-agent penalties (reference KL) are not folded in here;
   * `policyGradientUpdate` subtracts them before the advantage.
   */
  returns: number[];
}

export interface CollectRolloutsOptions {
  items: readonly TaskItem[];
  /** Dataset positions of `items` (default 0…n−1); they name items in reward errors. */
  itemIndices?: readonly number[];
  /** One per agent. */
  formatters: readonly Formatter[];
  /** Samples every agent's responses (a `PolicySampler` over the agents being trained). */
  sampler: CandidateSampler;
  /** num_generations: responses per agent per item (G). */
  numGenerations: number;
  reward: JointReward;
  /** Applied to each reward (a task reward's reward_processor); CoMLRL applies none to learned rewards. */
  rewardProcessor?: RewardProcessor | undefined;
  /** Reward calls in flight at once (items are independent); default 1. */
  concurrency?: number;
}

/**
 * Samples G responses per agent for every item (one sampler call for the whole set, which
 * batches the rows per agent), joins them by generation index and scores every item's G joint
 * responses with one reward call. The reward's output is validated as the oracle's is
 * (`scoreJointCandidates`): exactly one finite number per generation, else an error naming the
 * item. Results are in item order whatever order the reward calls finish in.
 */
export async function collectRollouts(o: CollectRolloutsOptions): Promise<Rollout[]> {
  const g = o.numGenerations;
  if (!Number.isInteger(g) || g < 1) throw new RangeError(`num_generations must be an integer ≥ 1, got ${g}`);
  const indices = o.itemIndices ?? o.items.map((_, k) => k);
  if (indices.length !== o.items.length) throw new RangeError(`itemIndices has ${indices.length} entries for ${o.items.length} items`);
  if (o.items.length === 0) return [];
  // Chat-message prompts are rendered by the sampler with each agent's template; rewards and
  // rollouts get the text it rendered.
  const given = o.items.map((item, k) => formatAgentPrompts(o.formatters, item, indices[k]!));
  const samples = await o.sampler.sample(given, g, indices);
  const prompts = promptTexts(given, samples, indices);
  const numAgents = o.formatters.length;
  samples.forEach((perAgent, k) => {
    if (perAgent.length !== numAgents) throw new RangeError(`the sampler returned ${perAgent.length} agent(s) for item ${indices[k]}; expected ${numAgents}`);
    perAgent.forEach((s, a) => {
      if (s.tokens.length !== g || s.texts.length !== g) {
        throw new RangeError(
          `the sampler returned ${s.tokens.length} token row(s) and ${s.texts.length} text(s) for agent ${a} on item ${indices[k]}; expected ${g}`,
        );
      }
    });
  });
  const limit = pLimit(Math.max(1, Math.floor(o.concurrency ?? 1)));
  const scored = await Promise.all(
    o.items.map((item, k) =>
      limit(() =>
        scoreJointCandidates(
          o.reward,
          samples[k]!.map((s) => [...s.texts]),
          { item, itemIndex: indices[k]!, prompts: prompts[k]! },
          o.rewardProcessor,
        ),
      ),
    ),
  );
  return o.items.map((item, k) => {
    const perAgent = samples[k]!;
    const rewards = scored[k]!.processed;
    return {
      itemIndex: indices[k]!,
      item,
      prompts: prompts[k]!,
      promptIds: perAgent.map((s) => [...s.promptIds]),
      tokens: perAgent.map((s) => s.tokens.map((t) => [...t])),
      texts: perAgent.map((s) => [...s.texts]),
      rewards: [...rewards],
      returns: [...rewards],
    };
  });
}

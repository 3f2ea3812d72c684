import { mean, type RngStream } from "@pbrl/core-tensor";
import {
  emptyTally,
  formatAgentPrompts,
  PolicySampler,
  promptTexts,
  scoreRewardJobs,
  tallyTruncation,
  warnTruncation,
  type Formatter,
  type GenerationSettings,
  type Policy,
  type RewardFunc,
  type RewardProcessor,
  type TaskItem,
} from "@pbrl/preference-data";

export interface EvalSample {
  itemIndex: number;
  /** Each agent's prompt as text: chat messages as the agent's chat template rendered them. */
  prompts: string[];
  completions: string[];
  reward: number;
}

export interface EvalResult {
  "eval/turn_1/reward_mean": number;
  "eval/turn_1/expected_return": number;
  samples: EvalSample[];
}

/**
 * Evaluation with the task reward: each current policy samples one answer per eval item (with
 * the training sampling settings, from the eval stream), and reward_func (then reward_processor)
 * scores the joint answer. Never a learned reward model.
 */
export async function evaluatePolicies(o: {
  policies: readonly Policy[];
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  rewardFunc: RewardFunc;
  rewardProcessor?: RewardProcessor | undefined;
  settings: GenerationSettings;
  rng: RngStream;
  concurrency: number;
  /** reward_timeout_s (default 300; null: no limit). */
  rewardTimeoutS?: number | null | undefined;
  /** Receives the warning about prompts cut to max_prompt_length. */
  onWarning?: ((message: string) => void) | undefined;
}): Promise<EvalResult> {
  const indices = o.items.map((_, i) => i);
  const formatted = o.items.map((item, i) => formatAgentPrompts(o.formatters, item, i));
  const samples = new PolicySampler(o.policies, o.settings, o.rng).sample(formatted, 1, indices);
  warnTruncation(tallyTruncation(emptyTally(), samples), o.onWarning);
  // The reward sees each prompt as text, as in collection (chat messages rendered).
  const prompts = promptTexts(formatted, samples, indices);
  const jobs = o.items.map((item, i) => ({ completions: samples[i]!.map((a) => [...a.texts]), context: { item, itemIndex: i, prompts: prompts[i]! } }));
  const scored = await scoreRewardJobs(o.rewardFunc, jobs, {
    rewardProcessor: o.rewardProcessor,
    concurrency: o.concurrency,
    rewardTimeoutS: o.rewardTimeoutS,
  });
  const out: EvalSample[] = o.items.map((_, i) => ({
    itemIndex: i,
    prompts: prompts[i]!,
    completions: samples[i]!.map((a) => a.texts[0]!),
    reward: scored[i]!.processed[0]!,
  }));
  const rewardMean = mean(out.map((x) => x.reward));
  return { "eval/turn_1/reward_mean": rewardMean, "eval/turn_1/expected_return": rewardMean, samples: out };
}

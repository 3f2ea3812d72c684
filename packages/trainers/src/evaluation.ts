import type { RngStream } from "@pbrl/core-tensor";
import { formatPrompts, PolicySampler, scoreJointCandidates, type Formatter, type GenerationSettings, type Policy, type RewardFunc, type RewardProcessor, type TaskItem } from "@pbrl/preference-data";
import pLimit from "p-limit";

export interface EvalSample {
  itemIndex: number;
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
}): Promise<EvalResult> {
  const prompts = o.items.map((item, i) => formatPrompts(o.formatters, item, i));
  const samples = new PolicySampler(o.policies, o.settings, o.rng).sample(prompts, 1);
  const limit = pLimit(o.concurrency);
  const scored = await Promise.all(
    o.items.map((item, i) =>
      limit(() => scoreJointCandidates(o.rewardFunc, samples[i]!.map((a) => [...a.texts]), { item, itemIndex: i, prompts: prompts[i]! }, o.rewardProcessor)),
    ),
  );
  const out: EvalSample[] = o.items.map((_, i) => ({ itemIndex: i, prompts: prompts[i]!, completions: samples[i]!.map((a) => a.texts[0]!), reward: scored[i]!.processed[0]! }));
  const mean = out.length === 0 ? 0 : out.reduce((s, x) => s + x.reward, 0) / out.length;
  return { "eval/turn_1/reward_mean": mean, "eval/turn_1/expected_return": mean, samples: out };
}

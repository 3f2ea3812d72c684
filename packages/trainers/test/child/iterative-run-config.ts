import type { MADPOIterTrainerOptions } from "../../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const items = ["The cat", "We drink", "A bird", "Snow falls", "The river", "Old trees"].map((prompt, i) => ({ id: `q${i}`, prompt }));

/** One small iterative run, shared by the in-process tests and the child processes. */
export const ITERATIVE_RUN = {
  agentModel: TINY_LLAMA,
  trainDataset: items,
  evalDataset: items.slice(0, 3),
  // letter e's in both answers together; two answers of at most 6 tokens hold at most 12
  rewardFunc: Object.assign((c: string[][]) => c[0]!.map((a, j) => (a + c[1]![j]!).split("e").length - 1), { reward_range: [0, 12] as [number, number] }),
  args: {
    num_iterations: 4,
    preference_num_candidates: 4,
    max_new_tokens: 6,
    temperature: 1.0,
    top_p: 1.0,
    comparator_policy: "history" as const,
    comparator_history_k: 1,
    preference_replay_mode: "lambda_decay" as const,
    preference_replay_lambda: 0.7,
    preference_replay_sample_size: 8,
    train_batch_size: 4,
    eval_interval: 3,
    eval_num_samples: 3,
    log_reward_distribution: true,
    logging_steps: 1,
    agent_learning_rate: 1e-3,
    seed: 11,
    verbose: true,
  },
} satisfies Omit<MADPOIterTrainerOptions, "args"> & { args: Record<string, unknown> };

/** What MARLHFIter adds to that run: a small RL stage, and the reward model labelling later rounds. */
export const MARLHF_ITER_ARGS = {
  num_train_epochs: 1,
  num_generations: 2,
  train_batch_size: 3,
  reward_num_train_epochs: 1,
  reward_train_batch_size: 4,
  reward_learning_rate: 1e-3,
  preference_scoring_reward: "reward_model",
} as const;

/** The shared run labelled by people: one comparison per item against the current agents, every round's pairs only. */
export const HUMAN_RUN_ARGS = {
  preference_labeler: "human" as const,
  num_iterations: 2,
  comparator_policy: "current" as const,
  comparator_history_k: null,
  preference_replay_mode: "current" as const,
  preference_replay_lambda: null,
  preference_replay_sample_size: null,
  log_reward_distribution: false,
  eval_interval: 0,
  verbose: false,
};

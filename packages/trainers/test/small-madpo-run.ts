import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { MADPOConfigInput, RewardFunc } from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

/** One small MADPO run on the tiny fixture model, shared by the trainer's tests. */
export const TINY = TINY_LLAMA;
export const items = ["The cat", "We drink", "A bird", "Snow falls", "The river"].map((prompt, i) => ({ id: `q${i}`, prompt }));
/** Rewards answers with more letter e's, from both agents together. */
export const countE: RewardFunc = (c) => c[0]!.map((a, j) => (a + c[1]![j]!).split("e").length - 1);

export const small = (over: MADPOConfigInput = {}): MADPOConfigInput => ({
  output_dir: mkdtempSync(path.join(tmpdir(), "pbrl-madpo-")),
  preference_num_candidates: 4,
  preference_pairs_per_sample: 2,
  max_new_tokens: 8,
  temperature: 1.0,
  top_p: 1.0,
  num_train_epochs: 2,
  train_batch_size: 2,
  agent_learning_rate: 1e-3,
  eval_interval: 2,
  eval_num_samples: 3,
  logging_steps: 1,
  verbose: false,
  ...over,
});

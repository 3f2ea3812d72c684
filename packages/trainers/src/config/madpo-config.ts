/**
 * MADPOConfig: CoMLRL's MADPOConfig fields with the same names and defaults, plus pbrl's own
 * (`seed`, `output_dir`, `madpo_score_last_token`, `backend`, `bf16` (TRL's name), `save_dtype`,
 * `verbose`, `reward_concurrency`, `generation_batch_size`, `reward_timeout_s`), and TRL's
 * `max_prompt_length` and `overwrite_output_dir`. Building one validates every field and rule at once.
 */
import { BACKEND_NAMES } from "@pbrl/core-tensor";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import { bool, choice, devices, finite, finiteOrNull, int, intOrNull, nonNegative, positive, positiveOrNull, text, unitInterval } from "./fields.js";

export const MADPO_FIELDS = {
  num_train_epochs: int(1, 20),
  agent_learning_rate: positive(5.0e-6),
  logging_steps: int(1, 50),
  num_agents: int(1, 2),
  collaboration_mode: choice(["decentralized", "centralized"], "decentralized"),
  parallel_training: choice(["none", "mp"], "none", { null: "none" }),
  agent_devices: devices(),
  max_new_tokens: int(1, 256),
  temperature: positive(0.6),
  top_p: unitInterval(0.6),
  top_k: intOrNull(0, 50),
  num_turns: int(1, 1),
  discount: finite(1.0),
  joint_mode: choice(["aligned"], "aligned", { align: "aligned" }),
  early_termination_threshold: finiteOrNull(null),
  external_prompt_passthrough: bool(false),
  eval_interval: int(0, 16),
  eval_num_samples: int(0, 4),
  eval_batch_size: int(1, 1),
  rollout_buffer_size: int(1, 2),
  train_batch_size: intOrNull(1, null),
  advantage_normalization: bool(true),
  advantage_mode: choice(["mean", "raw", "max", "rloo"], "mean"),
  reference_kl_enabled: bool(false),
  reference_kl_coef: nonNegative(0.1),
  reference_devices: devices(),
  preference_num_candidates: int(2, 80),
  preference_pairs_per_sample: intOrNull(1, 16),
  pair_selection: choice(["reward_gap", "all", "random"], "reward_gap"),
  dpo_beta: positive(0.1),
  use_environment_step: bool(true),
  environment_steps_per_pair: int(1, 2),
  // pbrl's own fields
  seed: int(0, 0),
  output_dir: text("pbrl-output"),
  madpo_score_last_token: bool(false),
  backend: choice(["auto", ...BACKEND_NAMES], "auto"),
  // TRL's name: matrix products and attention in bfloat16 (libtorch), float32 weights and optimizer state.
  bf16: bool(false),
  /** Storage dtype of the trained agents written at the end (resume checkpoints stay float32). */
  save_dtype: choice(["float32", "bfloat16", "float16"], "float32"),
  verbose: bool(true),
  reward_concurrency: int(1, 8),
  /** Seconds one reward (or reward_processor) call may take before the run stops with an error; null: no limit. */
  reward_timeout_s: positiveOrNull(300),
  /** TRL's name: prompts longer than this many tokens are cut from the left, with a warning; null: a prompt that leaves no room for max_new_tokens in the model's context is an error. */
  max_prompt_length: intOrNull(1, null),
  /** TRL's name: where metrics go besides metrics.jsonl ("tensorboard": event files under output_dir/tensorboard). */
  report_to: choice(["jsonl", "tensorboard"], "jsonl", { none: "jsonl" }),
  /** TRL's name: a fresh run may write into an output_dir that holds an earlier run's files only when true. */
  overwrite_output_dir: bool(false),
  generation_batch_size: int(1, 64),
};

type Fields = ConfigOf<typeof MADPO_FIELDS>;

/** Device lists must have one entry, or one per agent (per actor when centralized). */
function deviceRule<C extends Fields>(field: "agent_devices" | "reference_devices"): ConfigRule<C> {
  return {
    field,
    uses: ["num_agents", "collaboration_mode"],
    check: (c) => {
      const d = c[field];
      const centralized = c.collaboration_mode === "centralized";
      const count = centralized ? 1 : c.num_agents;
      return Array.isArray(d) && d.length !== 1 && d.length !== count ? `has ${d.length} entries; give one device or ${count} (one per ${centralized ? "actor" : "agent"})` : undefined;
    },
  };
}

/** The rules of MADPOConfig, shared by every config that extends it. */
export function madpoRules<C extends Fields>(): ConfigRule<C>[] {
  return [
    { field: "num_turns", uses: [], check: (c) => (c.num_turns !== 1 ? `got ${c.num_turns}; the preference trainers support single-turn training only (num_turns=1)` : undefined) },
    {
      field: "preference_pairs_per_sample",
      uses: ["pair_selection"],
      check: (c) =>
        c.pair_selection === "all" && c.preference_pairs_per_sample !== null
          ? `got ${c.preference_pairs_per_sample}; pair_selection="all" keeps every non-tied pair, so set preference_pairs_per_sample=null`
          : undefined,
    },
    { field: "agent_devices", uses: ["parallel_training"], check: (c) => (c.parallel_training === "mp" && c.agent_devices === null ? 'parallel_training="mp" needs explicit agent_devices (one device, or one per agent)' : undefined) },
    deviceRule<C>("agent_devices"),
    deviceRule<C>("reference_devices"),
  ];
}

/** A validated MADPO configuration with every default filled in. */
export type MADPOConfig = Readonly<Omit<Fields, "train_batch_size"> & { train_batch_size: number }>;
/** What a user may pass: any subset of the fields. */
export type MADPOConfigInput = ConfigInputOf<typeof MADPO_FIELDS>;

/** Builds and validates a MADPO config: `MADPOConfig({ num_agents: 2, dpo_beta: 0.2 })`. */
export function MADPOConfig(input: MADPOConfigInput = {}): MADPOConfig {
  const c = buildConfig("MADPOConfig", MADPO_FIELDS, madpoRules(), input);
  return Object.freeze({ ...c, train_batch_size: c.train_batch_size ?? c.rollout_buffer_size });
}

/**
 * MADPOConfig: CoMLRL's MADPOConfig fields with the same names and defaults, plus pbrl's own
 * (`seed`, `output_dir`, `madpo_score_last_token`, `backend`, `bf16` (TRL's name), `save_dtype`,
 * `verbose`, `reward_concurrency`, `generation_batch_size`, `reward_timeout_s`), and TRL's
 * `max_prompt_length` and `overwrite_output_dir`. Building one validates every field and rule at once.
 */
import { BACKEND_NAMES } from "@pbrl/core-tensor";
import { ADVANTAGE_MODES } from "@pbrl/rl-backends";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import {
  bool,
  choice,
  devices,
  finite,
  finiteOrNull,
  int,
  intOrNull,
  nonNegative,
  positive,
  positiveOrNull,
  targetModules,
  fraction,
  text,
  textOrNull,
  unitInterval,
} from "./fields.js";

/** The fields of every trainer config, MADPO's and MARLHF's (CoMLRL's MARLHFConfig extends MADPOConfig, so dpo_beta and its kin are accepted there too, without effect). */
export const PREFERENCE_FIELDS = {
  num_train_epochs: int(1, 20).describe("Passes over the preference pairs (iterative trainers: each round's; MARLHF: epochs of the RL stage)."),
  agent_learning_rate: positive(5.0e-6).describe("AdamW learning rate of every agent."),
  logging_steps: int(1, 50).describe("Least number of environment steps between two training-metric records."),
  num_agents: int(1, 2).describe("Number of agents (centralized: the number of roles the one model plays)."),
  collaboration_mode: choice(["decentralized", "centralized"], "decentralized").describe(
    "decentralized: one model per agent; centralized: one model writes every role's answer in one completion.",
  ),
  parallel_training: choice(["none", "mp", "ddp"], "none", { null: "none" }).describe(
    "mp: each agent's update runs in its own worker thread, on its agent_devices entry; ddp: ranks of a c10d process group (pbrl train --nproc_per_node, torchrun, srun; needs the libtorch addon; docs/distributed.md); none: all in one thread.",
  ),
  // transformers' name and default
  ddp_timeout: int(1, 1800).describe(
    "Seconds a collective of parallel_training=ddp may wait for the other ranks before the run stops with an error naming the missing rank.",
  ),
  agent_devices: devices().describe("Device of the agents' models: null (the backend's), one for all, or one per agent (e.g. cuda:0)."),
  max_new_tokens: int(1, 256).describe("Most tokens generated per completion (centralized: for the whole joint completion)."),
  temperature: positive(0.6).describe("Sampling temperature."),
  top_p: unitInterval(0.6).describe("Nucleus sampling: sample from the most likely tokens whose probabilities add up to top_p (1: off)."),
  top_k: intOrNull(0, 50).describe("Sample among the top_k most likely tokens; null or 0: no top-k limit."),
  num_turns: int(1, 1).describe("Turns per episode; the preference trainers train single turns only, so it must be 1."),
  discount: finite(1.0).describe("Discount across turns; no effect with a single turn (kept for CoMLRL configs)."),
  joint_mode: choice(["aligned"], "aligned", { align: "aligned" }).describe(
    "How agents' candidates form joint responses: aligned joins the candidates with the same index.",
  ),
  early_termination_threshold: finiteOrNull(null).describe("Multi-turn early-stop reward threshold; no effect with a single turn (kept for CoMLRL configs)."),
  external_prompt_passthrough: bool(false).describe("Multi-turn external-prompt option; no effect with a single turn (kept for CoMLRL configs)."),
  eval_interval: int(0, 16).describe("Evaluate before every k-th update (MARLHF's RL stage: every k training items); 0: no periodic evaluation."),
  eval_num_samples: int(0, 4).describe("Eval items each evaluation uses."),
  eval_batch_size: int(1, 1).describe("Eval items generated at once."),
  rollout_buffer_size: int(1, 2).describe(
    "Default of train_batch_size; in MARLHF's RL stage, the items each agent's buffer holds before the agent is updated (in mini-batches of train_batch_size).",
  ),
  train_batch_size: intOrNull(1, null).describe("Preference pairs per DPO update (MARLHF: items per RL mini-batch); null: rollout_buffer_size."),
  advantage_normalization: bool(true).describe("Normalize advantages in MARLHF's RL stage (no effect in MADPO)."),
  advantage_mode: choice(ADVANTAGE_MODES, "mean").describe(
    "Baseline of MARLHF's REINFORCE-family RL stage; MARLHF sets it from rl_algorithm (no effect in MADPO).",
  ),
  reference_kl_enabled: bool(false).describe("Keep frozen copies of the initial agents and penalize the KL divergence from them (MARLHF's RL stage)."),
  reference_kl_coef: nonNegative(0.1).describe("Weight of the reference KL penalty."),
  reference_devices: devices().describe("Device of the reference models: null (the agents' devices), one for all, or one per agent."),
  preference_num_candidates: int(2, 80).describe(
    "Candidates each agent samples per training item (iterative trainers: each round); those with the same index form a joint response.",
  ),
  preference_pairs_per_sample: intOrNull(1, 16).describe("Most preference pairs kept per item; null: every non-tied pair (required with pair_selection=all)."),
  pair_selection: choice(["reward_gap", "all", "random"], "reward_gap").describe(
    "Which pairs an item keeps: reward_gap (largest reward gaps first), all (every non-tied pair) or random.",
  ),
  dpo_beta: positive(0.1).describe("β of the DPO loss: how hard each update pushes the winner's log-probability margin over the loser's."),
  use_environment_step: bool(true).describe("Advance the environment-step counter (which paces logging) during DPO updates."),
  environment_steps_per_pair: int(1, 2).describe("Environment steps counted per preference pair trained on."),
  // pbrl's own fields
  seed: int(0, 0).describe("Seed of every random stream (sampling, shuffles, replay draws, new heads): the same seed repeats a run."),
  output_dir: text("pbrl-output").describe("Folder of the run: config.json, metrics.jsonl, checkpoints and the trained agents."),
  backend: choice(["auto", ...BACKEND_NAMES], "auto").describe(
    "Tensor backend; auto: $PBRL_BACKEND, else native when built, else wasm (libtorch, when built, for bf16, GPU devices or runs too big for the 4 GB heap).",
  ),
  // TRL's name: matrix products and attention in bfloat16 (libtorch), float32 weights and optimizer state.
  bf16: bool(false).describe("Matrix products and attention in bfloat16 (libtorch backend); weights and optimizer state stay float32."),
  save_dtype: choice(["float32", "bfloat16", "float16"], "float32").describe(
    "Dtype of the trained agents written at the end (resume checkpoints stay float32).",
  ),
  verbose: bool(true).describe("Print progress and log lines on stderr."),
  reward_concurrency: int(1, 8).describe("Most reward_func calls in flight at once (for async rewards such as LLM judges)."),
  reward_timeout_s: positiveOrNull(300).describe(
    "Seconds one call of the run's own code may take before the run stops with an error: a reward_func or reward_processor call and, as the run starts, an asynchronous formatter's call (pbrl train: a formatters module's) or a chat template's rendering of one prompt; null: no limit.",
  ),
  // TRL's name
  max_prompt_length: intOrNull(1, null).describe(
    "Prompts longer than this many tokens are cut from the left, with a warning; null: a prompt that leaves no room for max_new_tokens is an error.",
  ),
  // TRL's name
  report_to: choice(["jsonl", "tensorboard"], "jsonl", { none: "jsonl" }).describe(
    "Where metrics go besides metrics.jsonl: jsonl (nowhere else) or tensorboard (event files in output_dir/tensorboard).",
  ),
  // TRL's name
  overwrite_output_dir: bool(false).describe(
    "Let a fresh run replace an earlier run's files in output_dir: only those pbrl listed in .pbrl-run.json, never anyone else's.",
  ),
  generation_batch_size: int(1, 64).describe("Most sequences generated in one batch (several items' candidates share a batch)."),
  // TRL's names
  push_to_hub: bool(false).describe(
    "At the end of training, upload the trained agents (output_dir/agents, with a model card holding the run's config and final eval) to the Hugging Face hub repo hub_model_id; the token comes from HF_TOKEN.",
  ),
  hub_model_id: textOrNull(null).describe("The hub repo push_to_hub uploads to, as org/name (created if missing)."),
  hub_private_repo: bool(false).describe("Create the push_to_hub repo private (an existing repo keeps its visibility)."),
  // TRL's ModelConfig names (docs/lora.md)
  use_peft: bool(false).describe(
    "Train LoRA adapters instead of every weight: agents that start from one checkpoint share one frozen copy of it, each with its own adapter.",
  ),
  lora_r: int(1, 16).describe("Rank of each LoRA update B·A."),
  lora_alpha: positive(32).describe("LoRA scale numerator: the update is scaled by lora_alpha / lora_r (lora_alpha / √lora_r with use_rslora)."),
  lora_dropout: fraction(0.05).describe("Dropout on each adapted layer's input to A, in training forward passes only (seeded by the run)."),
  lora_target_modules: targetModules().describe(
    'Linear layers that get adapters, by module name (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; Phi-3: qkv_proj, gate_up_proj) or "all-linear"; null: PEFT\'s default for the family.',
  ),
  use_rslora: bool(false).describe("Rank-stabilised LoRA: scale by lora_alpha / √lora_r."),
  // TRL's names: memory controls
  gradient_checkpointing: bool(false).describe("Keep only each decoder layer's input in the forward pass and recompute its activations in the backward pass."),
  gradient_accumulation_steps: int(1, 1).describe(
    "Micro-batches whose gradients are summed before one optimizer step (the update of one k-times larger batch).",
  ),
};

/** pbrl's fields that only MADPO's learning step reads: the MARLHF configs reject them as unknown. */
export const MADPO_ONLY_FIELDS = {
  madpo_score_last_token: bool(false).describe("Include each completion's last token in the DPO log-probabilities (CoMLRL leaves it out)."),
};

export const MADPO_FIELDS = { ...PREFERENCE_FIELDS, ...MADPO_ONLY_FIELDS };

type Fields = ConfigOf<typeof PREFERENCE_FIELDS>;
/** What the shared rules read, in every config (the iterative ones offer one pair_selection more). */
type RuleFields = Omit<Fields, "pair_selection"> & { pair_selection: string };

/** Device lists must have one entry, or one per agent (per actor when centralized). */
function deviceRule<C extends RuleFields>(field: "agent_devices" | "reference_devices"): ConfigRule<C> {
  return {
    field,
    uses: ["num_agents", "collaboration_mode"],
    check: (c) => {
      const d = c[field];
      const centralized = c.collaboration_mode === "centralized";
      const count = centralized ? 1 : c.num_agents;
      return Array.isArray(d) && d.length !== 1 && d.length !== count
        ? `has ${d.length} entries; give one device or ${count} (one per ${centralized ? "actor" : "agent"})`
        : undefined;
    },
  };
}

/** The rules of MADPOConfig, shared by every config that extends it. */
export function madpoRules<C extends RuleFields>(): ConfigRule<C>[] {
  return [
    {
      field: "num_turns",
      uses: [],
      check: (c) => (c.num_turns !== 1 ? `got ${c.num_turns}; the preference trainers support single-turn training only (num_turns=1)` : undefined),
    },
    {
      field: "preference_pairs_per_sample",
      uses: ["pair_selection"],
      check: (c) =>
        c.pair_selection === "all" && c.preference_pairs_per_sample !== null
          ? `got ${c.preference_pairs_per_sample}; pair_selection="all" keeps every non-tied pair, so set preference_pairs_per_sample=null`
          : undefined,
    },
    {
      field: "agent_devices",
      uses: ["parallel_training"],
      check: (c) =>
        c.parallel_training === "mp" && c.agent_devices === null
          ? 'parallel_training="mp" needs explicit agent_devices (one device, or one per agent)'
          : undefined,
    },
    {
      field: "hub_model_id",
      uses: ["push_to_hub"],
      check: (c) =>
        c.push_to_hub && c.hub_model_id === null
          ? "is required with push_to_hub=true: the hub repo to upload the agents to, as org/name"
          : c.hub_model_id !== null && !/^[\w.-]+\/[\w.-]+$/.test(c.hub_model_id)
            ? `got ${JSON.stringify(c.hub_model_id)}; expected a hub repo id org/name`
            : undefined,
    },
    deviceRule<C>("agent_devices"),
    deviceRule<C>("reference_devices"),
    {
      field: "parallel_training",
      uses: ["use_peft"],
      check: (c) =>
        c.use_peft && c.parallel_training === "mp"
          ? 'is "mp", which gives every worker thread a copy of its agent\'s model; with use_peft=true the agents share one base in one thread: set parallel_training="none"'
          : undefined,
    },
  ];
}

/** What every validated trainer config holds (MADPO's and MARLHF's), every default filled in. */
export type PreferenceConfig = Readonly<Omit<Fields, "train_batch_size"> & { train_batch_size: number }>;
/** A validated MADPO configuration with every default filled in. */
export type MADPOConfig = PreferenceConfig & Readonly<ConfigOf<typeof MADPO_ONLY_FIELDS>>;
/** What a user may pass: any subset of the fields. */
export type MADPOConfigInput = ConfigInputOf<typeof MADPO_FIELDS>;

/** Builds and validates a MADPO config: `MADPOConfig({ num_agents: 2, dpo_beta: 0.2 })`. */
export function MADPOConfig(input: MADPOConfigInput = {}): MADPOConfig {
  const c = buildConfig("MADPOConfig", MADPO_FIELDS, madpoRules<ConfigOf<typeof MADPO_FIELDS>>(), input);
  return Object.freeze({ ...c, train_batch_size: c.train_batch_size ?? c.rollout_buffer_size });
}

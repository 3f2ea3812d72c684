/**
 * MADPOIterConfig: MADPOConfig plus CoMLRL's iterative fields (rounds, replay, comparator,
 * checkpoints), with the iterative defaults (6 rounds, 1 epoch per round, 20 candidates, 4 pairs
 * per item, pair_selection="comparator_reward"), and pbrl's `resume_from_checkpoint`.
 */
import { z } from "zod";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import { accepting, bool, choice, devices, int, intOrNull, positive, positiveOrNull, text, textOrNull } from "./fields.js";
import { MADPO_FIELDS, MADPO_ONLY_FIELDS, madpoRules, PREFERENCE_FIELDS } from "./madpo-config.js";

export const ITERATIVE_FIELDS = {
  num_iterations: int(1, 6).describe("Rounds; each samples the agents and the comparator, turns the comparisons into preference pairs and trains."),
  preference_replay_mode: choice(["current", "nearest_k", "all_history", "lambda_decay"], "current", {
    latest: "current",
    new: "current",
    recent_k: "nearest_k",
    last_k: "nearest_k",
    k: "nearest_k",
    lambda: "lambda_decay",
    td_lambda: "lambda_decay",
    "td-lambda": "lambda_decay",
  }).describe(
    "Which rounds' pairs train each round: current (this round's), nearest_k (the k latest rounds), all_history, or lambda_decay (older rounds weighted down by λ).",
  ),
  preference_replay_k: intOrNull(1, null).describe(
    "Number of latest non-empty rounds replayed with nearest_k (required there); current accepts only null or 1.",
  ),
  preference_replay_lambda: accepting(z.number().min(0).max(1).nullable().default(null), "a number in [0, 1], or null", "number in [0, 1] | null").describe(
    "λ of lambda_decay (required there): a round a rounds older than the newest is drawn with weight ∝ (1−λ)·λ^a; 1: all rounds alike, 0: the newest only.",
  ),
  preference_replay_sample_size: intOrNull(1, null).describe(
    "Pairs drawn from the replayed rounds each round (not with current); null: this round's pair count, else the latest non-empty round's.",
  ),
  preference_replay_dir: textOrNull(null).describe("Folder of the per-round preference-pair files; null: output_dir/preference_replay."),
  log_reward_distribution: bool(false).describe("Write per-round histograms of agent and comparator rewards (reward_func needs a reward_range)."),
  policy_checkpoint_dir: textOrNull(null).describe(
    "Folder of the per-round policy checkpoints (comparator_policy=history reads them); null: output_dir/checkpoints.",
  ),
  comparator_policy: choice(["current", "current_copy", "model", "history", "api"], "current", {
    self: "current",
    online: "current",
    copy: "current_copy",
    online_copy: "current_copy",
    "current-offload": "current_copy",
    current_offload: "current_copy",
    external: "model",
    comparator: "model",
    reference: "model",
    ref: "model",
    checkpoint: "history",
    previous: "history",
    previous_iteration: "history",
    http: "api",
    endpoint: "api",
  }).describe(
    "What the agents are compared against: current (their own samples), current_copy (a frozen copy of the round's start), model, history (an earlier round's checkpoint) or api.",
  ),
  comparator_generation_mode: choice(["decentralized", "centralized"], "decentralized", {
    decentralised: "decentralized",
    multi_agent: "decentralized",
    "multi-agent": "decentralized",
    centralised: "centralized",
    single_agent: "centralized",
    "single-agent": "centralized",
  }).describe("decentralized: the comparator answers each agent's own prompt; centralized: one model answers all roles in one joint completion."),
  comparator_centralized_agent_index: int(0, 0).describe("The agent whose model and tokenizer generate for a centralized comparator."),
  comparator_model_name: textOrNull(null).describe("Checkpoint folder or hub id of the comparator model for every agent (comparator_policy=model)."),
  comparator_agents: accepting(
    z.array(z.string().min(1)).min(1).nullable().default(null),
    "null, or a non-empty list of checkpoint folders or hub ids",
    "string[] | null",
  ).describe("One comparator checkpoint folder or hub id per agent (comparator_policy=model)."),
  comparator_devices: devices().describe("Device of the comparator models: null (the agents' devices), one for all, or one per agent."),
  comparator_num_candidates: intOrNull(1, null).describe(
    "Comparator candidates per item (compared index by index with the agents'); null: preference_num_candidates.",
  ),
  comparator_history_k: intOrNull(1, null).describe(
    "comparator_policy=history: compare with the weights the round k rounds back started from (1: the previous round's); null: 1.",
  ),
  comparator_api_url: textOrNull(null).describe("Full endpoint URL of the API comparator (required with comparator_policy=api)."),
  comparator_api_format: choice(["generic", "openai", "anthropic", "openai_responses"], "generic", {
    openai_chat: "openai",
    chat: "openai",
    anthropic_messages: "anthropic",
    messages: "anthropic",
    responses: "openai_responses",
    codex: "openai_responses",
  }).describe(
    "API request and response format: generic (your service), openai (Chat Completions), anthropic (Messages) or openai_responses (docs/api-comparators.md).",
  ),
  comparator_api_model: textOrNull(null).describe("Model name sent to the API (required by openai, anthropic and openai_responses)."),
  comparator_api_max_n_per_request: intOrNull(1, null).describe(
    "Most completions asked for in one request (openai's n, generic's num_return_sequences); null: known provider limits only.",
  ),
  comparator_api_timeout: positive(120).describe("Seconds one HTTP request may take."),
  comparator_api_headers: accepting(
    z.record(z.string(), z.string()).nullable().default(null),
    "null, or a mapping of header names to string values",
    "{string: string} | null",
  ).describe("Extra HTTP headers sent with every request."),
  // A key written into a config ends up in config.json, logs and shell history: pbrl takes keys only from the environment.
  comparator_api_key: accepting(
    z.null().default(null),
    "null: pbrl reads API keys only from the environment variable named by comparator_api_key_env",
    "null",
  ).describe("Must stay null: name the environment variable that holds the key in comparator_api_key_env instead."),
  comparator_api_key_env: textOrNull(null).describe(
    "Name of the environment variable holding the API key; null: OPENAI_API_KEY or ANTHROPIC_API_KEY for those formats, no key for generic.",
  ),
  comparator_api_key_header: text("Authorization").describe("HTTP header that carries the key."),
  comparator_api_key_prefix: accepting(z.string().default("Bearer"), "a string (may be empty)", "string").describe(
    "Text before the key in its header; empty: the bare key.",
  ),
  comparator_api_response_field: text("completions").describe("Dotted path of the completions in a generic-format response (e.g. data.0.outputs)."),
  comparator_api_extra_body: accepting(
    z.record(z.string(), z.unknown()).nullable().default(null),
    "null, or a JSON object merged into every request body",
    "object | null",
  ).describe("JSON object merged into every request body (a null value removes that field)."),
  comparator_api_max_concurrency: int(1, 4).describe("API requests in flight at once."),
  comparator_api_max_retries: int(0, 5).describe("Retries of a failed API request after its first attempt."),
  comparator_api_allow_partial: bool(false).describe("Accept fewer completions than asked for instead of stopping with an error."),
  // A larger body is an error, never buffered whole: a misbehaving server cannot exhaust memory.
  comparator_api_max_response_bytes: int(1024, 8 * 1024 * 1024).describe("Largest API response body read, in bytes; a larger one is an error."),
  preference_labeler: choice(["reward", "human"], "reward", {
    reward_func: "reward",
    oracle: "reward",
    task: "reward",
    person: "human",
    people: "human",
    manual: "human",
  }).describe("What labels each round's comparisons: reward (reward_func) or human (people pick in a browser page the trainer serves; docs/human-labels.md)."),
  human_pairs_per_item: int(1, 1).describe("preference_labeler=human: index-aligned comparisons per item put to people each round."),
  human_labels_per_pair: int(1, 1).describe(
    "preference_labeler=human: labels each comparison needs from different people; the majority decides (no two people see one comparison at once below it).",
  ),
  human_min_labels: intOrNull(1, null).describe("preference_labeler=human: decided comparisons a round waits for before training; null: all of them."),
  human_label_timeout_s: positiveOrNull(null).describe(
    "preference_labeler=human: seconds a round waits for labels; then what is undecided is dropped or labelled by human_fallback. null: no limit.",
  ),
  human_fallback: choice(["drop", "reward"], "drop").describe(
    "preference_labeler=human: what happens to comparisons people left undecided when a round stops waiting: drop, or reward (reward_func labels them).",
  ),
  human_label_host: text("127.0.0.1").describe(
    "preference_labeler=human: address the labelling page listens on; beyond loopback the token in its link is the only lock.",
  ),
  human_label_port: accepting(z.number().int().min(0).max(65535).default(0), "an integer in [0, 65535]", "int in [0, 65535]").describe(
    "preference_labeler=human: port of the labelling page; 0: any free port (the link is printed).",
  ),
  resume_from_checkpoint: accepting(
    z
      .union([z.string().min(1), z.boolean()])
      .nullable()
      .default(null),
    "null, true (the latest checkpoint of output_dir), or a checkpoint path",
    "bool | string | null",
  ).describe("Resume a stopped run: true (the latest checkpoint in output_dir) or a checkpoint path; null or false: a fresh run."),
};

/** The API comparator's fields: set only with comparator_policy="api". */
const API_FIELDS = Object.keys(ITERATIVE_FIELDS).filter((f) => f.startsWith("comparator_api_") && f !== "comparator_api_key");

/** Fields that mean something only when people label (preference_labeler="human"). */
const HUMAN_FIELDS = Object.keys(ITERATIVE_FIELDS).filter((f) => f.startsWith("human_"));

/** Iterative defaults that differ from MADPOConfig's (the meaning stays: so do the descriptions). */
const ITERATIVE_DEFAULTS = {
  num_train_epochs: int(1, 1).describe(MADPO_FIELDS.num_train_epochs.description!),
  preference_num_candidates: int(2, 20).describe(MADPO_FIELDS.preference_num_candidates.description!),
  preference_pairs_per_sample: intOrNull(1, 4).describe(MADPO_FIELDS.preference_pairs_per_sample.description!),
  pair_selection: choice(["reward_gap", "all", "random", "comparator_reward"], "comparator_reward").describe(
    "Which agent-vs-comparator pairs an item keeps: comparator_reward (the strongest comparator samples first), reward_gap, all or random.",
  ),
};

/** The fields of both iterative configs, MADPOIterConfig's and MARLHFIterConfig's. */
export const ITERATIVE_CONFIG_FIELDS = { ...PREFERENCE_FIELDS, ...ITERATIVE_DEFAULTS, ...ITERATIVE_FIELDS };

export const MADPO_ITER_FIELDS = { ...ITERATIVE_CONFIG_FIELDS, ...MADPO_ONLY_FIELDS };

type Fields = ConfigOf<typeof ITERATIVE_CONFIG_FIELDS>;

const onlyWith = (modes: string) => `is only valid with ${modes}`;

/** The iterative rules, shared by MADPOIterConfig and MARLHFIterConfig. */
export function iterativeRules<C extends Fields>(): ConfigRule<C>[] {
  const rule = (field: keyof C & string, uses: (keyof C & string)[], check: (c: C) => string | undefined): ConfigRule<C> => ({ field, uses, check });
  return [
    rule("preference_replay_k", ["preference_replay_mode"], (c) => {
      const k = c.preference_replay_k;
      switch (c.preference_replay_mode) {
        case "current":
          return k !== null && k !== 1 ? `got ${k}; preference_replay_mode="current" accepts preference_replay_k only unset or 1` : undefined;
        case "nearest_k":
          return k === null ? 'is required with preference_replay_mode="nearest_k" (the number of recent non-empty rounds to replay)' : undefined;
        default:
          return k !== null ? `got ${k}; preference_replay_k ${onlyWith('preference_replay_mode="nearest_k"')}` : undefined;
      }
    }),
    rule("preference_replay_lambda", ["preference_replay_mode"], (c) => {
      const l = c.preference_replay_lambda;
      if (c.preference_replay_mode === "lambda_decay")
        return l === null ? 'is required with preference_replay_mode="lambda_decay" (a number in [0, 1])' : undefined;
      return l !== null ? `got ${l}; preference_replay_lambda ${onlyWith('preference_replay_mode="lambda_decay"')}` : undefined;
    }),
    rule("preference_replay_sample_size", ["preference_replay_mode"], (c) =>
      c.preference_replay_mode === "current" && c.preference_replay_sample_size !== null
        ? `got ${c.preference_replay_sample_size}; preference_replay_mode="current" trains on this round's pairs without sampling, so preference_replay_sample_size is only valid with nearest_k, all_history or lambda_decay`
        : undefined,
    ),
    rule("comparator_centralized_agent_index", ["comparator_generation_mode", "num_agents", "collaboration_mode"], (c) => {
      const i = c.comparator_centralized_agent_index;
      if (c.collaboration_mode === "centralized" && i !== 0) return `got ${i}; collaboration_mode="centralized" has one actor, index 0`;
      if (c.comparator_generation_mode === "centralized" && i >= c.num_agents)
        return `got ${i}; it must name one of the ${c.num_agents} agents (0 … ${c.num_agents - 1})`;
      return undefined;
    }),
    rule("comparator_model_name", ["comparator_policy"], (c) =>
      c.comparator_policy === "model"
        ? c.comparator_model_name === null && c.comparator_agents === null
          ? 'comparator_policy="model" needs comparator_model_name or comparator_agents'
          : undefined
        : c.comparator_model_name !== null || c.comparator_agents !== null
          ? `comparator_model_name and comparator_agents are only valid with comparator_policy="model" (got comparator_policy="${c.comparator_policy}")`
          : undefined,
    ),
    rule("comparator_agents", ["comparator_policy", "num_agents", "comparator_generation_mode"], (c) => {
      const a = c.comparator_agents;
      if (a === null || c.comparator_policy !== "model") return undefined;
      const ok = a.length === c.num_agents || (c.comparator_generation_mode === "centralized" && a.length === 1);
      return ok ? undefined : `has ${a.length} entries; give one per agent (${c.num_agents})${c.comparator_generation_mode === "centralized" ? " or one" : ""}`;
    }),
    rule("comparator_history_k", ["comparator_policy"], (c) =>
      c.comparator_policy !== "history" && c.comparator_history_k !== null
        ? `got ${c.comparator_history_k}; comparator_history_k is only valid with comparator_policy="history"`
        : undefined,
    ),
    rule("comparator_api_url", ["comparator_policy"], (c) =>
      c.comparator_policy === "api" && c.comparator_api_url === null ? 'is required with comparator_policy="api"' : undefined,
    ),
    ...API_FIELDS.map((field) =>
      rule(field as keyof C & string, ["comparator_policy"], (c) => {
        const v = (c as Record<string, unknown>)[field];
        const def = (ITERATIVE_FIELDS as Record<string, z.ZodType>)[field]!.parse(undefined);
        return c.comparator_policy !== "api" && JSON.stringify(v) !== JSON.stringify(def)
          ? `is only valid with comparator_policy="api" (got comparator_policy="${c.comparator_policy}")`
          : undefined;
      }),
    ),
    ...HUMAN_FIELDS.map((field) =>
      rule(field as keyof C & string, ["preference_labeler"], (c) => {
        const v = (c as Record<string, unknown>)[field];
        const def = (ITERATIVE_FIELDS as Record<string, z.ZodType>)[field]!.parse(undefined);
        return c.preference_labeler !== "human" && JSON.stringify(v) !== JSON.stringify(def)
          ? `is only valid with preference_labeler="human" (got preference_labeler="${c.preference_labeler}")`
          : undefined;
      }),
    ),
    rule("human_min_labels", ["preference_labeler", "human_label_timeout_s", "human_fallback"], (c) =>
      c.preference_labeler === "human" && c.human_fallback === "reward" && c.human_min_labels === null && c.human_label_timeout_s === null
        ? 'human_fallback="reward" labels what people leave undone when a round stops waiting: set human_min_labels or human_label_timeout_s, or the round waits for every label and the fallback never runs'
        : undefined,
    ),
    rule("comparator_devices", ["num_agents"], (c) => {
      const d = c.comparator_devices;
      return Array.isArray(d) && d.length !== 1 && d.length !== c.num_agents
        ? `has ${d.length} entries; give one device or ${c.num_agents} (one per agent)`
        : undefined;
    }),
  ];
}

/** What both validated iterative configs hold (MADPOIterConfig's and MARLHFIterConfig's). */
export type IterativeConfig = Readonly<
  Omit<Fields, "train_batch_size" | "comparator_history_k"> & { train_batch_size: number; comparator_history_k: number | null }
>;
/** A validated MADPOIter configuration. */
export type MADPOIterConfig = IterativeConfig & Readonly<ConfigOf<typeof MADPO_ONLY_FIELDS>>;
export type MADPOIterConfigInput = ConfigInputOf<typeof MADPO_ITER_FIELDS>;

/** Defaults filled in after validation: train_batch_size, history k = 1, centralized comparator generation. */
export function finishIterative<C extends Fields>(c: C): C & { train_batch_size: number } {
  return {
    ...c,
    train_batch_size: c.train_batch_size ?? c.rollout_buffer_size,
    comparator_history_k: c.comparator_policy === "history" ? (c.comparator_history_k ?? 1) : c.comparator_history_k,
    // one actor writes every role: its comparator does too
    comparator_generation_mode: c.collaboration_mode === "centralized" ? "centralized" : c.comparator_generation_mode,
  };
}

/**
 * `MADPOIterConfig({ num_agents: 2, preference_replay_mode: "lambda_decay",
 * preference_replay_lambda: 0.8, preference_replay_sample_size: 256 })`
 */
export function MADPOIterConfig(input: MADPOIterConfigInput = {}): MADPOIterConfig {
  type MadpoIterFields = ConfigOf<typeof MADPO_ITER_FIELDS>;
  const c = buildConfig("MADPOIterConfig", MADPO_ITER_FIELDS, [...madpoRules<MadpoIterFields>(), ...iterativeRules<MadpoIterFields>()], input);
  return Object.freeze(finishIterative(c));
}

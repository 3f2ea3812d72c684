/**
 * MADPOIterConfig: MADPOConfig plus CoMLRL's iterative fields (rounds, replay, comparator,
 * checkpoints), with the iterative defaults (6 rounds, 1 epoch per round, 20 candidates, 4 pairs
 * per item, pair_selection="comparator_reward"), and pbrl's `resume_from_checkpoint`.
 */
import { z } from "zod";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import { bool, choice, devices, int, intOrNull, positive, text, textOrNull } from "./fields.js";
import { MADPO_FIELDS, madpoRules } from "./madpo-config.js";

const describe = <T extends z.ZodType>(schema: T, accepts: string): T => schema.meta({ accepts });

export const ITERATIVE_FIELDS = {
  num_iterations: int(1, 6),
  preference_replay_mode: choice(["current", "nearest_k", "all_history", "lambda_decay"], "current", {
    latest: "current",
    new: "current",
    recent_k: "nearest_k",
    last_k: "nearest_k",
    k: "nearest_k",
    lambda: "lambda_decay",
    td_lambda: "lambda_decay",
    "td-lambda": "lambda_decay",
  }),
  preference_replay_k: intOrNull(1, null),
  preference_replay_lambda: describe(z.number().min(0).max(1).nullable().default(null), "a number in [0, 1], or null"),
  preference_replay_sample_size: intOrNull(1, null),
  preference_replay_dir: textOrNull(null),
  log_reward_distribution: bool(false),
  policy_checkpoint_dir: textOrNull(null),
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
  }),
  comparator_generation_mode: choice(["decentralized", "centralized"], "decentralized", {
    decentralised: "decentralized",
    multi_agent: "decentralized",
    "multi-agent": "decentralized",
    centralised: "centralized",
    single_agent: "centralized",
    "single-agent": "centralized",
  }),
  comparator_centralized_agent_index: int(0, 0),
  comparator_model_name: textOrNull(null),
  comparator_agents: describe(z.array(z.string().min(1)).min(1).nullable().default(null), "null, or a non-empty list of checkpoint folders or hub ids"),
  comparator_devices: devices(),
  comparator_num_candidates: intOrNull(1, null),
  comparator_history_k: intOrNull(1, null),
  comparator_api_url: textOrNull(null),
  comparator_api_format: choice(["generic", "openai", "anthropic", "openai_responses"], "generic", {
    openai_chat: "openai",
    chat: "openai",
    anthropic_messages: "anthropic",
    messages: "anthropic",
    responses: "openai_responses",
    codex: "openai_responses",
  }),
  comparator_api_model: textOrNull(null),
  comparator_api_max_n_per_request: intOrNull(1, null),
  comparator_api_timeout: positive(120),
  comparator_api_headers: describe(z.record(z.string(), z.string()).nullable().default(null), "null, or a mapping of header names to string values"),
  comparator_api_key: describe(z.null().default(null), "null: pbrl reads API keys only from the environment variable named by comparator_api_key_env"),
  comparator_api_key_env: textOrNull(null),
  comparator_api_key_header: text("Authorization"),
  comparator_api_key_prefix: describe(z.string().default("Bearer"), "a string (may be empty)"),
  comparator_api_response_field: text("completions"),
  comparator_api_extra_body: describe(z.record(z.string(), z.unknown()).nullable().default(null), "null, or a JSON object merged into every request body"),
  comparator_api_max_concurrency: int(1, 4),
  comparator_api_max_retries: int(0, 5),
  comparator_api_allow_partial: bool(false),
  /** Largest response body read from the API (bytes); a larger one is an error, never buffered whole. */
  comparator_api_max_response_bytes: int(1024, 8 * 1024 * 1024),
  resume_from_checkpoint: describe(z.union([z.string().min(1), z.boolean()]).nullable().default(null), "null, true (the latest checkpoint of output_dir), or a checkpoint path"),
};

/** The API comparator's fields: set only with comparator_policy="api". */
const API_FIELDS = Object.keys(ITERATIVE_FIELDS).filter((f) => f.startsWith("comparator_api_") && f !== "comparator_api_key");

/** Iterative defaults that differ from MADPOConfig's. */
const ITERATIVE_DEFAULTS = {
  num_train_epochs: int(1, 1),
  preference_num_candidates: int(2, 20),
  preference_pairs_per_sample: intOrNull(1, 4),
  pair_selection: choice(["reward_gap", "all", "random", "comparator_reward"], "comparator_reward"),
};

export const MADPO_ITER_FIELDS = { ...MADPO_FIELDS, ...ITERATIVE_DEFAULTS, ...ITERATIVE_FIELDS };

type Fields = ConfigOf<typeof MADPO_ITER_FIELDS>;

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
      if (c.preference_replay_mode === "lambda_decay") return l === null ? 'is required with preference_replay_mode="lambda_decay" (a number in [0, 1])' : undefined;
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
      if (c.comparator_generation_mode === "centralized" && i >= c.num_agents) return `got ${i}; it must name one of the ${c.num_agents} agents (0 … ${c.num_agents - 1})`;
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
      c.comparator_policy !== "history" && c.comparator_history_k !== null ? `got ${c.comparator_history_k}; comparator_history_k is only valid with comparator_policy="history"` : undefined,
    ),
    rule("comparator_api_url", ["comparator_policy"], (c) => (c.comparator_policy === "api" && c.comparator_api_url === null ? 'is required with comparator_policy="api"' : undefined)),
    ...API_FIELDS.map((field) =>
      rule(field as keyof C & string, ["comparator_policy"], (c) => {
        const v = (c as Record<string, unknown>)[field];
        const def = (ITERATIVE_FIELDS as Record<string, z.ZodType>)[field]!.parse(undefined);
        return c.comparator_policy !== "api" && JSON.stringify(v) !== JSON.stringify(def) ? `is only valid with comparator_policy="api" (got comparator_policy="${c.comparator_policy}")` : undefined;
      }),
    ),
    rule("comparator_devices", ["num_agents"], (c) => {
      const d = c.comparator_devices;
      return Array.isArray(d) && d.length !== 1 && d.length !== c.num_agents ? `has ${d.length} entries; give one device or ${c.num_agents} (one per agent)` : undefined;
    }),
  ];
}

/** A validated MADPOIter configuration. */
export type MADPOIterConfig = Readonly<Omit<Fields, "train_batch_size" | "comparator_history_k"> & { train_batch_size: number; comparator_history_k: number | null }>;
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
  const c = buildConfig("MADPOIterConfig", MADPO_ITER_FIELDS, [...madpoRules<Fields>(), ...iterativeRules<Fields>()], input);
  return Object.freeze(finishIterative(c));
}

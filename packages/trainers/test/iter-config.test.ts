import { describe, expect, it } from "vitest";
import { ConfigError, MADPOIterConfig } from "../src/index.js";

function problems(input: Record<string, unknown>): string[] {
  try {
    MADPOIterConfig(input as never);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("MADPOIterConfig", () => {
  it("builds the seed's example and has the iterative defaults", () => {
    const c = MADPOIterConfig({ num_agents: 2, preference_replay_mode: "lambda_decay", preference_replay_lambda: 0.8, preference_replay_sample_size: 256 });
    expect(c).toMatchObject({
      num_agents: 2,
      preference_replay_mode: "lambda_decay",
      preference_replay_lambda: 0.8,
      preference_replay_sample_size: 256,
      num_iterations: 6,
      num_train_epochs: 1,
      preference_num_candidates: 20,
      preference_pairs_per_sample: 4,
      pair_selection: "comparator_reward",
      comparator_policy: "current",
      comparator_generation_mode: "decentralized",
      comparator_centralized_agent_index: 0,
      comparator_history_k: null,
      resume_from_checkpoint: null,
      dpo_beta: 0.1,
    });
  });

  it("normalises aliases as CoMLRL does", () => {
    // @ts-expect-error as read from a file: case and spaces are normalised at run time
    expect(MADPOIterConfig({ preference_replay_mode: " Latest " }).preference_replay_mode).toBe("current");
    expect(MADPOIterConfig({ preference_replay_mode: "recent_k", preference_replay_k: 2 }).preference_replay_mode).toBe("nearest_k");
    expect(MADPOIterConfig({ preference_replay_mode: "td-lambda", preference_replay_lambda: 0.5 }).preference_replay_mode).toBe("lambda_decay");
    expect(MADPOIterConfig({ comparator_policy: "self" }).comparator_policy).toBe("current");
    expect(MADPOIterConfig({ comparator_policy: "current-offload" }).comparator_policy).toBe("current_copy");
    expect(MADPOIterConfig({ comparator_policy: "ref", comparator_model_name: "m" }).comparator_policy).toBe("model");
    expect(MADPOIterConfig({ comparator_policy: "previous_iteration" }).comparator_policy).toBe("history");
    expect(MADPOIterConfig({ comparator_policy: "endpoint", comparator_api_url: "http://x" }).comparator_policy).toBe("api");
    expect(MADPOIterConfig({ comparator_generation_mode: "single-agent" }).comparator_generation_mode).toBe("centralized");
    expect(MADPOIterConfig({ comparator_generation_mode: "decentralised" }).comparator_generation_mode).toBe("decentralized");
  });

  it("fills history k = 1 and forces centralized comparator generation for a centralized actor", () => {
    expect(MADPOIterConfig({ comparator_policy: "history" }).comparator_history_k).toBe(1);
    expect(MADPOIterConfig({ comparator_policy: "history", comparator_history_k: 3 }).comparator_history_k).toBe(3);
    expect(MADPOIterConfig({ collaboration_mode: "centralized" }).comparator_generation_mode).toBe("centralized");
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [{ num_iterations: 0 }, /^num_iterations: got 0; expected an integer ≥ 1$/],
    // replay mode "current" (the default)
    [{ preference_replay_k: 2 }, /^preference_replay_k: got 2; preference_replay_mode="current" accepts preference_replay_k only unset or 1$/],
    [
      { preference_replay_lambda: 0.5 },
      /^preference_replay_lambda: got 0.5; preference_replay_lambda is only valid with preference_replay_mode="lambda_decay"$/,
    ],
    [
      { preference_replay_sample_size: 8 },
      /^preference_replay_sample_size: got 8; preference_replay_mode="current" trains on this round's pairs without sampling/,
    ],
    // nearest_k
    [{ preference_replay_mode: "nearest_k" }, /^preference_replay_k: is required with preference_replay_mode="nearest_k"/],
    [{ preference_replay_mode: "nearest_k", preference_replay_k: 0 }, /^preference_replay_k: got 0; expected an integer ≥ 1, or null$/],
    [
      { preference_replay_mode: "nearest_k", preference_replay_k: 2, preference_replay_lambda: 0.5 },
      /^preference_replay_lambda: got 0.5; .*only valid with preference_replay_mode="lambda_decay"$/,
    ],
    [
      { preference_replay_mode: "nearest_k", preference_replay_k: 2, preference_replay_sample_size: 0 },
      /^preference_replay_sample_size: got 0; expected an integer ≥ 1, or null$/,
    ],
    // all_history
    [
      { preference_replay_mode: "all_history", preference_replay_k: 2 },
      /^preference_replay_k: got 2; preference_replay_k is only valid with preference_replay_mode="nearest_k"$/,
    ],
    // lambda_decay
    [{ preference_replay_mode: "lambda_decay" }, /^preference_replay_lambda: is required with preference_replay_mode="lambda_decay"/],
    [{ preference_replay_mode: "lambda_decay", preference_replay_lambda: 1.5 }, /^preference_replay_lambda: got 1.5; expected a number in \[0, 1\], or null$/],
    [{ preference_replay_mode: "lambda_decay", preference_replay_lambda: -0.1 }, /^preference_replay_lambda: got -0.1/],
    [
      { preference_replay_mode: "lambda_decay", preference_replay_lambda: Number.NaN },
      /^preference_replay_lambda: got NaN; expected a number in \[0, 1\], or null$/,
    ],
    [
      { preference_replay_mode: "lambda_decay", preference_replay_lambda: 0.5, preference_replay_k: 3 },
      /^preference_replay_k: got 3; .*only valid with preference_replay_mode="nearest_k"$/,
    ],
    [
      { preference_replay_mode: "nearset_k" },
      /^preference_replay_mode: got "nearset_k"; did you mean "nearest_k"\? \(one of "current", "nearest_k", "all_history", "lambda_decay", "latest"/,
    ],
    // comparator
    [{ comparator_policy: "mdoel" }, /^comparator_policy: got "mdoel"; did you mean "model"\? \(one of "current", "current_copy", "model", "history", "api"/],
    [{ comparator_policy: "model" }, /^comparator_model_name: comparator_policy="model" needs comparator_model_name or comparator_agents$/],
    [
      { comparator_model_name: "m" },
      /^comparator_model_name: comparator_model_name and comparator_agents are only valid with comparator_policy="model" \(got comparator_policy="current"\)$/,
    ],
    [{ comparator_policy: "history", comparator_agents: ["a", "b"] }, /^comparator_model_name: .*only valid with comparator_policy="model"/],
    [{ comparator_policy: "model", comparator_agents: ["a", "b", "c"] }, /^comparator_agents: has 3 entries; give one per agent \(2\)$/],
    [{ comparator_history_k: 2 }, /^comparator_history_k: got 2; comparator_history_k is only valid with comparator_policy="history"$/],
    [{ comparator_policy: "history", comparator_history_k: 0 }, /^comparator_history_k: got 0; expected an integer ≥ 1, or null$/],
    [{ comparator_policy: "api" }, /^comparator_api_url: is required with comparator_policy="api"$/],
    [
      { comparator_generation_mode: "centralized", comparator_centralized_agent_index: 2 },
      /^comparator_centralized_agent_index: got 2; it must name one of the 2 agents \(0 … 1\)$/,
    ],
    [
      { collaboration_mode: "centralized", comparator_centralized_agent_index: 1 },
      /^comparator_centralized_agent_index: got 1; collaboration_mode="centralized" has one actor, index 0$/,
    ],
    [{ comparator_num_candidates: 0 }, /^comparator_num_candidates: got 0; expected an integer ≥ 1, or null$/],
    [{ comparator_devices: ["a", "b", "c"] }, /^comparator_devices: has 3 entries; give one device or 2 \(one per agent\)$/],
    [{ pair_selection: "all" }, /^preference_pairs_per_sample: got 4; pair_selection="all"/],
    [{ pair_selection: "best" }, /^pair_selection: got "best"; expected one of "reward_gap", "all", "random", "comparator_reward"$/],
    [{ resume_from_checkpoint: 3 }, /^resume_from_checkpoint: got 3; expected null, true \(the latest checkpoint of output_dir\), or a checkpoint path$/],
    [{ num_turns: 2 }, /^num_turns: got 2; the preference trainers support single-turn training only/],
  ])("%j", (input, message) => {
    const p = problems(input);
    expect(p, p.join("\n")).toHaveLength(1);
    expect(p[0]).toMatch(message);
  });

  it("accepts what the rules allow", () => {
    expect(problems({ preference_replay_k: 1 })).toEqual([]);
    expect(problems({ preference_replay_mode: "nearest_k", preference_replay_k: 3, preference_replay_sample_size: 64 })).toEqual([]);
    expect(problems({ preference_replay_mode: "lambda_decay", preference_replay_lambda: 0 })).toEqual([]);
    expect(problems({ preference_replay_mode: "lambda_decay", preference_replay_lambda: 1 })).toEqual([]);
    expect(problems({ comparator_policy: "model", comparator_agents: ["a", "b"] })).toEqual([]);
    expect(problems({ comparator_policy: "model", comparator_agents: ["a"], comparator_generation_mode: "centralized" })).toEqual([]);
    expect(problems({ num_agents: 3, comparator_generation_mode: "centralized", comparator_centralized_agent_index: 2 })).toEqual([]);
    expect(problems({ pair_selection: "all", preference_pairs_per_sample: null })).toEqual([]);
    expect(problems({ resume_from_checkpoint: true })).toEqual([]);
  });
});

describe("API comparator fields", () => {
  it("normalises the format aliases and keeps the defaults of the native formats' key variables for the comparator", () => {
    const c = MADPOIterConfig({
      comparator_policy: "api",
      comparator_api_url: "https://api.anthropic.com/v1/messages",
      // @ts-expect-error as read from a file: case is normalised at run time
      comparator_api_format: "Messages",
      comparator_api_model: "claude-sonnet-4-20250514",
      comparator_api_key_env: "ANTHROPIC_API_KEY",
    });
    expect(c).toMatchObject({
      comparator_api_format: "anthropic",
      comparator_api_timeout: 120,
      comparator_api_key_header: "Authorization",
      comparator_api_key_prefix: "Bearer",
      comparator_api_response_field: "completions",
      comparator_api_max_concurrency: 4,
      comparator_api_max_retries: 5,
      comparator_api_allow_partial: false,
    });
    expect(MADPOIterConfig({ comparator_policy: "api", comparator_api_url: "u", comparator_api_format: "codex" }).comparator_api_format).toBe(
      "openai_responses",
    );
    expect(MADPOIterConfig({ comparator_policy: "api", comparator_api_url: "u", comparator_api_format: "chat" }).comparator_api_format).toBe("openai");
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [
      { comparator_policy: "api", comparator_api_url: "u", comparator_api_format: "grpc" },
      /^comparator_api_format: got "grpc"; expected one of "generic", "openai", "anthropic", "openai_responses", "openai_chat", "chat"/,
    ],
    [{ comparator_policy: "api", comparator_api_url: "u", comparator_api_timeout: 0 }, /^comparator_api_timeout: got 0; expected a finite number > 0$/],
    [{ comparator_policy: "api", comparator_api_url: "u", comparator_api_max_concurrency: 0 }, /^comparator_api_max_concurrency: got 0/],
    [{ comparator_policy: "api", comparator_api_url: "u", comparator_api_max_retries: -1 }, /^comparator_api_max_retries: got -1; expected an integer ≥ 0$/],
    [{ comparator_policy: "api", comparator_api_url: "u", comparator_api_max_n_per_request: 0 }, /^comparator_api_max_n_per_request: got 0/],
    [
      { comparator_policy: "api", comparator_api_url: "u", comparator_api_headers: { "x-a": 1 } },
      /^comparator_api_headers: got \{"x-a":1\}; expected null, or a mapping of header names to string values$/,
    ],
    [
      { comparator_policy: "api", comparator_api_url: "u", comparator_api_extra_body: [1] },
      /^comparator_api_extra_body: got \[1\]; expected null, or a JSON object/,
    ],
    [{ comparator_api_model: "gpt-5" }, /^comparator_api_model: is only valid with comparator_policy="api" \(got comparator_policy="current"\)$/],
    [{ comparator_policy: "history", comparator_api_url: "https://x" }, /^comparator_api_url: is only valid with comparator_policy="api"/],
  ])("%j", (input, message) => {
    const p = problems(input);
    expect(p, p.join("\n")).toHaveLength(1);
    expect(p[0]).toMatch(message);
  });

  it("never accepts a literal key, and never prints it", () => {
    const p = problems({ comparator_policy: "api", comparator_api_url: "u", comparator_api_key: "sk-SECRET-123" });
    expect(p).toEqual([
      "comparator_api_key: got a value (not shown); expected null: pbrl reads API keys only from the environment variable named by comparator_api_key_env",
    ]);
    expect(p.join("")).not.toContain("SECRET");
  });
});

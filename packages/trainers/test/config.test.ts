import { describe, expect, it } from "vitest";
import { ConfigError, MADPOConfig } from "../src/index.js";

function problems(input: Record<string, unknown>): string[] {
  try {
    MADPOConfig(input as never);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("MADPOConfig defaults", () => {
  it("has CoMLRL's names and defaults", () => {
    const c = MADPOConfig();
    expect(c).toMatchObject({
      num_train_epochs: 20,
      agent_learning_rate: 5e-6,
      logging_steps: 50,
      num_agents: 2,
      collaboration_mode: "decentralized",
      parallel_training: "none",
      agent_devices: null,
      max_new_tokens: 256,
      temperature: 0.6,
      top_p: 0.6,
      top_k: 50,
      num_turns: 1,
      joint_mode: "aligned",
      eval_interval: 16,
      eval_num_samples: 4,
      eval_batch_size: 1,
      rollout_buffer_size: 2,
      train_batch_size: 2,
      reference_kl_enabled: false,
      reference_kl_coef: 0.1,
      preference_num_candidates: 80,
      preference_pairs_per_sample: 16,
      pair_selection: "reward_gap",
      dpo_beta: 0.1,
      use_environment_step: true,
      environment_steps_per_pair: 2,
      seed: 0,
      madpo_score_last_token: false,
      backend: "auto",
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it("takes train_batch_size from rollout_buffer_size when unset, and normalises names", () => {
    expect(MADPOConfig({ rollout_buffer_size: 5 }).train_batch_size).toBe(5);
    expect(MADPOConfig({ rollout_buffer_size: 5, train_batch_size: 3 }).train_batch_size).toBe(3);
    // @ts-expect-error as read from a file: case and spaces are normalised at run time
    expect(MADPOConfig({ pair_selection: " Random " }).pair_selection).toBe("random");
    // @ts-expect-error as read from a file: case is normalised at run time
    expect(MADPOConfig({ parallel_training: "NULL" }).parallel_training).toBe("none");
    expect(MADPOConfig({ joint_mode: "align" }).joint_mode).toBe("aligned");
    expect(MADPOConfig({ pair_selection: "all", preference_pairs_per_sample: null }).pair_selection).toBe("all");
  });
});

describe("MADPOConfig validation: every rule names its field", () => {
  it.each<[Record<string, unknown>, RegExp]>([
    [{ num_train_epochs: 0 }, /^num_train_epochs: got 0; expected an integer ≥ 1$/],
    [{ num_agents: 0 }, /^num_agents: got 0/],
    [{ rollout_buffer_size: 0 }, /^rollout_buffer_size: got 0/],
    [{ train_batch_size: 0 }, /^train_batch_size: got 0; expected an integer ≥ 1, or null$/],
    [{ eval_interval: -1 }, /^eval_interval: got -1; expected an integer ≥ 0$/],
    [{ eval_num_samples: -1 }, /^eval_num_samples: got -1/],
    [{ eval_batch_size: 0 }, /^eval_batch_size: got 0/],
    [{ logging_steps: 0 }, /^logging_steps: got 0/],
    [{ num_turns: 2 }, /^num_turns: got 2; the preference trainers support single-turn training only/],
    [{ num_turns: 0 }, /^num_turns: got 0; expected an integer ≥ 1$/],
    [{ preference_num_candidates: 1 }, /^preference_num_candidates: got 1; expected an integer ≥ 2$/],
    [{ preference_pairs_per_sample: 0 }, /^preference_pairs_per_sample: got 0; expected an integer ≥ 1, or null$/],
    [{ dpo_beta: 0 }, /^dpo_beta: got 0; expected a finite number > 0$/],
    [{ dpo_beta: Number.NaN }, /^dpo_beta: got NaN/],
    [{ environment_steps_per_pair: 0 }, /^environment_steps_per_pair: got 0/],
    [{ pair_selection: "x" }, /^pair_selection: got "x"; expected one of "reward_gap", "all", "random"$/],
    [
      { pair_selection: "all" },
      /^preference_pairs_per_sample: got 16; pair_selection="all" keeps every non-tied pair, so set preference_pairs_per_sample=null$/,
    ],
    [{ collaboration_mode: "Centralised" }, /^collaboration_mode: got "Centralised"; did you mean "centralized"\? \(one of "decentralized", "centralized"\)$/],
    [{ parallel_training: "xla" }, /^parallel_training: got "xla"; expected one of "none", "mp", "ddp", "null"$/],
    [{ parallel_training: "mp" }, /^agent_devices: parallel_training="mp" needs explicit agent_devices/],
    [{ agent_devices: ["cpu", "cpu", "cpu"] }, /^agent_devices: has 3 entries; give one device or 2 \(one per agent\)$/],
    [{ reference_devices: [] }, /^reference_devices: got \[\]; expected null, a device name, or a non-empty list of device names$/],
    [{ reference_devices: ["a", "b", "c"] }, /^reference_devices: has 3 entries/],
    [{ reference_kl_coef: -0.1 }, /^reference_kl_coef: got -0.1; expected a finite number ≥ 0$/],
    [{ joint_mode: "cross" }, /^joint_mode: got "cross"; expected one of "aligned", "align"$/],
    [{ advantage_mode: "gae" }, /^advantage_mode: got "gae"; expected one of "mean", "raw", "max", "rloo"$/],
    [{ temperature: 0 }, /^temperature: got 0; expected a finite number > 0$/],
    [{ top_p: 1.5 }, /^top_p: got 1.5; expected a number in \(0, 1\]$/],
    [{ top_k: -1 }, /^top_k: got -1; expected an integer ≥ 0, or null$/],
    [{ max_new_tokens: 0 }, /^max_new_tokens: got 0/],
    [{ agent_learning_rate: 0 }, /^agent_learning_rate: got 0; expected a finite number > 0$/],
    [{ seed: -3 }, /^seed: got -3; expected an integer ≥ 0$/],
    [{ seed: 1.5 }, /^seed: got 1.5/],
    [{ backend: "cuda" }, /^backend: got "cuda"; expected one of "auto", "wasm", "cpu", "tensorflow", "native", "libtorch"$/],
    [{ output_dir: "" }, /^output_dir: got ""; expected a non-empty string$/],
    [{ madpo_score_last_token: "yes" }, /^madpo_score_last_token: got "yes"; expected true or false$/],
    [{ reward_concurrency: 0 }, /^reward_concurrency: got 0/],
    [{ generation_batch_size: 0 }, /^generation_batch_size: got 0/],
    [{ use_environment_step: 1 }, /^use_environment_step: got 1; expected true or false$/],
  ])("%j", (input, message) => {
    const p = problems(input);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(message);
  });

  it("rejects unknown keys with the closest valid name, and reports every problem at once", () => {
    expect(problems({ num_agnets: 2 })).toEqual(['num_agnets: unknown field (did you mean "num_agents"?)']);
    expect(problems({ totally_unrelated: 1 })).toEqual(["totally_unrelated: unknown field"]);
    const all = problems({ dpo_beta: 0, top_p: 2, prefernce_num_candidates: 4, num_turns: 3 });
    expect(all).toHaveLength(4);
    expect(() => MADPOConfig({ dpo_beta: 0 })).toThrow(/invalid MADPOConfig:\n {2}- dpo_beta/);
  });
});

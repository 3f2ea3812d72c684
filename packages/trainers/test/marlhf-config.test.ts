import { describe, expect, it } from "vitest";
import { ConfigError, MARLHFConfig, MARLHFIterConfig } from "../src/index.js";

function problems(build: (i: never) => unknown, input: Record<string, unknown>): string[] {
  try {
    build(input as never);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("MARLHFConfig", () => {
  it("has CoMLRL's MARLHF fields and defaults (devices default to the backend's)", () => {
    expect(MARLHFConfig()).toMatchObject({
      rl_algorithm: "magrpo",
      advantage_mode: "mean",
      num_generations: 4,
      reward_model_name: null,
      reward_model_device: null,
      reward_learning_rate: 1e-5,
      reward_num_train_epochs: 1,
      reward_train_batch_size: 1,
      reward_max_length: null,
      reward_freeze_backbone: false,
      critic_learning_rate: null,
      use_separate_critic: true,
      critic_type: "v",
      value_loss_coef: 0.6,
      value_clip_range: 0.2,
      num_train_epochs: 20,
      preference_num_candidates: 80,
    });
    expect(MARLHFConfig({ rl_algorithm: "maac", num_generations: 1 }).rl_algorithm).toBe("maac");
  });

  it("maps the algorithm to the advantage mode and accepts the alias mareforce", () => {
    expect(MARLHFConfig({ rl_algorithm: "mareforce" })).toMatchObject({ rl_algorithm: "mareinforce", advantage_mode: "raw" });
    // @ts-expect-error as read from a file: case is normalised at run time
    expect(MARLHFConfig({ rl_algorithm: "MAReMax" }).advantage_mode).toBe("max");
    expect(MARLHFConfig({ rl_algorithm: "marloo" }).advantage_mode).toBe("rloo");
    expect(MARLHFConfig({ rl_algorithm: "iac", advantage_mode: "max" }).advantage_mode).toBe("max");
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [{ rl_algorithm: "x" }, /^rl_algorithm: got "x"; expected one of "magrpo", "mareinforce", "maremax", "marloo", "maac", "iac", "mareforce"$/],
    [{ reward_learning_rate: 0 }, /^reward_learning_rate: got 0; expected a finite number > 0$/],
    [{ reward_num_train_epochs: 0 }, /^reward_num_train_epochs: got 0/],
    [{ reward_train_batch_size: 0 }, /^reward_train_batch_size: got 0/],
    [{ reward_max_length: 0 }, /^reward_max_length: got 0; expected an integer ≥ 1, or null$/],
    [{ num_generations: 1 }, /^num_generations: got 1; rl_algorithm="magrpo" compares samples within a group, so it needs num_generations ≥ 2$/],
    [{ rl_algorithm: "iac", num_generations: 0 }, /^num_generations: got 0; expected an integer ≥ 1$/],
    [{ critic_learning_rate: 0 }, /^critic_learning_rate: got 0/],
    [{ critic_type: "z" }, /^critic_type: got "z"; expected one of "v", "q"$/],
    [{ value_loss_coef: 0 }, /^value_loss_coef: got 0/],
    [{ value_clip_range: -1 }, /^value_clip_range: got -1/],
    [{ critic_devices: ["a", "b", "c"] }, /^critic_devices: has 3 entries/],
    [{ value_head_hidden_dim: 0 }, /^value_head_hidden_dim: got 0/],
    [{ reward_modle_name: "x" }, /^reward_modle_name: unknown field \(did you mean "reward_model_name"\?\)$/],
    [{ dpo_beta: 0 }, /^dpo_beta: got 0/],
  ])("%j", (input, message) => {
    const p = problems(MARLHFConfig, input);
    expect(p, p.join("\n")).toHaveLength(1);
    expect(p[0]).toMatch(message);
  });
});

describe("MARLHFIterConfig", () => {
  it("has the iterative defaults, the scoring reward, and the seed's replay example", () => {
    const c = MARLHFIterConfig({ num_agents: 2, preference_replay_mode: "lambda_decay", preference_replay_lambda: 0.8, preference_replay_sample_size: 256 });
    expect(c).toMatchObject({
      num_train_epochs: 2,
      reward_num_train_epochs: 2,
      num_iterations: 6,
      preference_num_candidates: 20,
      pair_selection: "comparator_reward",
      preference_scoring_reward: "task",
      rl_algorithm: "magrpo",
    });
    expect(MARLHFIterConfig({ preference_scoring_reward: "learned" }).preference_scoring_reward).toBe("reward_model");
    expect(MARLHFIterConfig({ preference_scoring_reward: "env" }).preference_scoring_reward).toBe("task");
  });

  it.each<[Record<string, unknown>, RegExp]>([
    [{ preference_scoring_reward: "judge" }, /^preference_scoring_reward: got "judge"; expected one of "task", "reward_model"/],
    [{ preference_replay_lambda: 0.5 }, /^preference_replay_lambda: got 0.5/],
    [{ rl_algorithm: "ppo" }, /^rl_algorithm: got "ppo"/],
  ])("%j", (input, message) => {
    const p = problems(MARLHFIterConfig, input);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(message);
  });
});

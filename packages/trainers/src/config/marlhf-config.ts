/**
 * MARLHFConfig and MARLHFIterConfig: the MADPO (iterative) fields plus CoMLRL's MARLHF fields —
 * the RL algorithm, the reward model and the critics — with the same names and defaults, except
 * that devices default to the tensor backend's device (never "cuda:0").
 */
import { isReinforceAlgorithm, REINFORCE_ALGORITHMS, RL_ALGORITHM_ALIASES, RL_ALGORITHMS } from "@pbrl/rl-backends";
import { z } from "zod";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import { accepting, bool, choice, devices, int, intOrNull, positive, textOrNull } from "./fields.js";
import { finishIterative, ITERATIVE_CONFIG_FIELDS, iterativeRules } from "./madpo-iter-config.js";
import { MADPO_FIELDS, madpoRules, PREFERENCE_FIELDS } from "./madpo-config.js";

const REWARD_EPOCHS = "Passes of reward-model fitting over the preference pairs (iterative: each round's).";

export const MARLHF_ONLY_FIELDS = {
  rl_algorithm: choice(RL_ALGORITHMS, "magrpo", RL_ALGORITHM_ALIASES).describe(
    "RL algorithm trained against the learned reward: magrpo, mareinforce, maremax, marloo (REINFORCE family) or maac, iac (actor-critic).",
  ),
  num_generations: int(1, 4).describe("Samples per agent per item in the RL stage (≥ 2 for the REINFORCE family, which compares them)."),
  reward_model_name: textOrNull(null).describe("Checkpoint folder or hub id of the joint reward model's backbone and tokenizer; null: the agents' model."),
  reward_model_device: textOrNull(null).describe("Device of the reward model; null: agent 0's device."),
  reward_learning_rate: positive(1.0e-5).describe("AdamW learning rate of the reward model."),
  reward_num_train_epochs: int(1, 1).describe(REWARD_EPOCHS),
  reward_train_batch_size: int(1, 1).describe("Preference pairs per reward-model step."),
  reward_max_length: intOrNull(1, null).describe("Tokens of a joint text the reward model reads (longer ones are truncated); null: the model's context."),
  reward_freeze_backbone: bool(false).describe("Train only the reward model's head; its backbone stays frozen."),
  critic_model_name: textOrNull(null).describe("Checkpoint folder or hub id of the critics (maac, iac with use_separate_critic); null: the agents' model."),
  critic_learning_rate: accepting(
    z.number().gt(0).refine(Number.isFinite).nullable().default(null),
    "a finite number > 0, or null (the agent learning rate)",
    "number > 0 | null",
  ).describe("AdamW learning rate of the critics; null: agent_learning_rate."),
  critic_devices: devices().describe("Device of the critics: null (the agents' devices), one for all, or one per agent."),
  use_separate_critic: bool(true).describe("iac: each agent gets a critic model of its own; false: a value head on the agent's own model."),
  critic_type: choice(["v", "q"], "v").describe("What the critic estimates: v, the value of the prompt; q, the value of the prompt with the response."),
  value_loss_coef: positive(0.6).describe("Weight of the value loss in the actor-critic update."),
  value_clip_range: accepting(z.number().gt(0).refine(Number.isFinite).nullable().default(0.2), "a finite number > 0, or null", "number > 0 | null").describe(
    "iac with a value head on the agent: how far a value may move from its old estimate in one update; null: no clipping.",
  ),
  critic_value_head_hidden_dim: intOrNull(1, null).describe("Hidden size of the separate critics' value head; null: a linear head."),
  value_head_hidden_dim: intOrNull(1, null).describe("Hidden size of the value head on the agents (iac without a separate critic); null: a linear head."),
};

export const MARLHF_FIELDS = { ...PREFERENCE_FIELDS, ...MARLHF_ONLY_FIELDS };

export const MARLHF_ITER_FIELDS = {
  ...ITERATIVE_CONFIG_FIELDS,
  ...MARLHF_ONLY_FIELDS,
  num_train_epochs: int(1, 2).describe(MADPO_FIELDS.num_train_epochs.description!),
  reward_num_train_epochs: int(1, 2).describe(REWARD_EPOCHS),
  preference_scoring_reward: choice(["task", "reward_model"], "task", {
    oracle: "task",
    environment: "task",
    env: "task",
    model: "reward_model",
    learned: "reward_model",
  }).describe(
    "What scores each round's candidates into preference pairs: task (reward_func) or reward_model (the previous round's reward model; reward_func in round 1).",
  ),
};

type MarlhfFields = ConfigOf<typeof MARLHF_FIELDS>;
/** What MARLHF's rules read, in both its configs (the iterative one offers one pair_selection more). */
type MarlhfRuleFields = Omit<MarlhfFields, "pair_selection"> & { pair_selection: string };

function marlhfRules<C extends MarlhfRuleFields>(): ConfigRule<C>[] {
  return [
    {
      field: "num_generations",
      uses: ["rl_algorithm"],
      check: (c) =>
        isReinforceAlgorithm(c.rl_algorithm) && c.num_generations < 2
          ? `got ${c.num_generations}; rl_algorithm="${c.rl_algorithm}" compares samples within a group, so it needs num_generations ≥ 2`
          : undefined,
    },
    {
      field: "critic_devices",
      uses: ["num_agents"],
      check: (c) => {
        const d = c.critic_devices;
        return Array.isArray(d) && d.length !== 1 && d.length !== c.num_agents
          ? `has ${d.length} entries; give one device or ${c.num_agents} (one per agent)`
          : undefined;
      },
    },
  ];
}

/** A REINFORCE-family algorithm's baseline replaces advantage_mode, as CoMLRL's mapping does. */
function finishMarlhf<C extends MarlhfRuleFields>(c: C): C {
  return isReinforceAlgorithm(c.rl_algorithm) ? { ...c, advantage_mode: REINFORCE_ALGORITHMS[c.rl_algorithm] } : c;
}

export type MARLHFConfig = Readonly<Omit<MarlhfFields, "train_batch_size"> & { train_batch_size: number }>;
export type MARLHFConfigInput = ConfigInputOf<typeof MARLHF_FIELDS>;

export function MARLHFConfig(input: MARLHFConfigInput = {}): MARLHFConfig {
  const c = buildConfig("MARLHFConfig", MARLHF_FIELDS, [...madpoRules<MarlhfFields>(), ...marlhfRules<MarlhfFields>()], input);
  return Object.freeze(finishMarlhf({ ...c, train_batch_size: c.train_batch_size ?? c.rollout_buffer_size }));
}

type IterFields = ConfigOf<typeof MARLHF_ITER_FIELDS>;
export type MARLHFIterConfig = Readonly<Omit<IterFields, "train_batch_size"> & { train_batch_size: number }>;
export type MARLHFIterConfigInput = ConfigInputOf<typeof MARLHF_ITER_FIELDS>;

export function MARLHFIterConfig(input: MARLHFIterConfigInput = {}): MARLHFIterConfig {
  const c = buildConfig(
    "MARLHFIterConfig",
    MARLHF_ITER_FIELDS,
    [
      ...madpoRules<IterFields>(),
      ...iterativeRules<IterFields>(),
      ...marlhfRules<IterFields>(),
      {
        field: "preference_scoring_reward",
        uses: ["preference_labeler"],
        check: (c) =>
          c.preference_labeler === "human" && c.preference_scoring_reward === "reward_model"
            ? 'preference_labeler="human" has people label every round; preference_scoring_reward="reward_model" would label them with the reward model: choose one'
            : undefined,
      },
    ],
    input,
  );
  return Object.freeze(finishMarlhf(finishIterative(c)));
}

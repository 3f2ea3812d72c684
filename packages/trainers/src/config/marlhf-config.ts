/**
 * MARLHFConfig and MARLHFIterConfig: the MADPO (iterative) fields plus CoMLRL's MARLHF fields —
 * the RL backend, the reward model and the critics — with the same names and defaults, except
 * that devices default to the tensor backend's device (never "cuda:0").
 */
import { z } from "zod";
import { buildConfig, type ConfigInputOf, type ConfigOf, type ConfigRule } from "./define-config.js";
import { bool, choice, devices, int, intOrNull, positive, textOrNull } from "./fields.js";
import { finishIterative, iterativeRules, MADPO_ITER_FIELDS } from "./madpo-iter-config.js";
import { MADPO_FIELDS, madpoRules } from "./madpo-config.js";

const describe = <T extends z.ZodType>(schema: T, accepts: string): T => schema.meta({ accepts });

export const RL_ALGORITHMS = ["magrpo", "mareinforce", "maremax", "marloo", "maac", "iac"] as const;
export type RlAlgorithm = (typeof RL_ALGORITHMS)[number];
/** The REINFORCE family's baseline for each algorithm (CoMLRL's advantage_mode mapping). */
export const ADVANTAGE_MODE: Partial<Record<RlAlgorithm, "mean" | "raw" | "max" | "rloo">> = { magrpo: "mean", mareinforce: "raw", maremax: "max", marloo: "rloo" };
const isActorCritic = (a: RlAlgorithm) => a === "maac" || a === "iac";

export const MARLHF_ONLY_FIELDS = {
  rl_algorithm: choice(RL_ALGORITHMS, "magrpo", { mareforce: "mareinforce" }),
  num_generations: int(1, 4),
  reward_model_name: textOrNull(null),
  reward_model_device: textOrNull(null),
  reward_learning_rate: positive(1.0e-5),
  reward_num_train_epochs: int(1, 1),
  reward_train_batch_size: int(1, 1),
  reward_max_length: intOrNull(1, null),
  reward_freeze_backbone: bool(false),
  critic_model_name: textOrNull(null),
  critic_learning_rate: describe(z.number().gt(0).refine(Number.isFinite).nullable().default(null), "a finite number > 0, or null (the agent learning rate)"),
  critic_devices: devices(),
  use_separate_critic: bool(true),
  critic_type: choice(["v", "q"], "v"),
  value_loss_coef: positive(0.6),
  value_clip_range: describe(z.number().gt(0).refine(Number.isFinite).nullable().default(0.2), "a finite number > 0, or null"),
  critic_value_head_hidden_dim: intOrNull(1, null),
  value_head_hidden_dim: intOrNull(1, null),
};

export const MARLHF_FIELDS = { ...MADPO_FIELDS, ...MARLHF_ONLY_FIELDS };

export const MARLHF_ITER_FIELDS = {
  ...MADPO_ITER_FIELDS,
  ...MARLHF_ONLY_FIELDS,
  num_train_epochs: int(1, 2),
  reward_num_train_epochs: int(1, 2),
  preference_scoring_reward: choice(["task", "reward_model"], "task", { oracle: "task", environment: "task", env: "task", model: "reward_model", learned: "reward_model" }),
};

type MarlhfFields = ConfigOf<typeof MARLHF_FIELDS>;

function marlhfRules<C extends MarlhfFields>(): ConfigRule<C>[] {
  return [
    {
      field: "parallel_training",
      uses: [],
      check: (c) =>
        c.parallel_training === "mp"
          ? 'got "mp"; MARLHF\'s RL stage trains its agents in one thread in this version of pbrl (worker threads run the MADPO trainers\' updates); use "none"'
          : undefined,
    },
    {
      field: "num_generations",
      uses: ["rl_algorithm"],
      check: (c) =>
        !isActorCritic(c.rl_algorithm) && c.num_generations < 2
          ? `got ${c.num_generations}; rl_algorithm="${c.rl_algorithm}" compares samples within a group, so it needs num_generations ≥ 2`
          : undefined,
    },
    {
      field: "critic_devices",
      uses: ["num_agents"],
      check: (c) => {
        const d = c.critic_devices;
        return Array.isArray(d) && d.length !== 1 && d.length !== c.num_agents ? `has ${d.length} entries; give one device or ${c.num_agents} (one per agent)` : undefined;
      },
    },
  ];
}

/** The algorithm's advantage mode replaces advantage_mode, as CoMLRL's mapping does. */
function finishMarlhf<C extends MarlhfFields>(c: C): C {
  const mode = ADVANTAGE_MODE[c.rl_algorithm];
  return mode === undefined ? c : { ...c, advantage_mode: mode };
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
  const c = buildConfig("MARLHFIterConfig", MARLHF_ITER_FIELDS, [...madpoRules<IterFields>(), ...iterativeRules<IterFields>(), ...marlhfRules<IterFields>()], input);
  return Object.freeze(finishMarlhf(finishIterative(c)));
}

/** The four trainers' configs by the name a run file's `trainer:` key gives them. */
import type { Fields } from "./define-config.js";
import { MADPO_FIELDS } from "./madpo-config.js";
import { MADPO_ITER_FIELDS } from "./madpo-iter-config.js";
import { MARLHF_FIELDS, MARLHF_ITER_FIELDS } from "./marlhf-config.js";

export interface TrainerConfigInfo {
  /** The config class's name, as CoMLRL spells it. */
  configName: string;
  fields: Fields;
}

export const TRAINER_CONFIGS = {
  madpo: { configName: "MADPOConfig", fields: MADPO_FIELDS },
  madpo_iter: { configName: "MADPOIterConfig", fields: MADPO_ITER_FIELDS },
  marlhf: { configName: "MARLHFConfig", fields: MARLHF_FIELDS },
  marlhf_iter: { configName: "MARLHFIterConfig", fields: MARLHF_ITER_FIELDS },
} as const satisfies Record<string, TrainerConfigInfo>;

export type TrainerConfigName = keyof typeof TRAINER_CONFIGS;

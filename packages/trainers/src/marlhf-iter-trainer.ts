import { MARLHFIterConfig, type MARLHFIterConfigInput } from "./config/marlhf-config.js";
import { IterativeTrainer, type IterativeTrainerOptions } from "./iterative-trainer.js";
import { marlhfLearnerFor, type MarlhfOptions } from "./marlhf-learner.js";
import { configFrom } from "./trainer-core.js";

export interface MARLHFIterTrainerOptions extends IterativeTrainerOptions, MarlhfOptions {
  args?: MARLHFIterConfig | MARLHFIterConfigInput;
}

/**
 * Iterative MARLHF: every round the agents and the comparator answer every item, the replay
 * buffer picks the training pairs, a freshly initialised joint reward model is fitted to them,
 * and the agents learn with RL against it, frozen. With preference_scoring_reward="reward_model"
 * the latest fitted reward model labels the next round's comparisons (the task reward until one
 * exists); every round file says which did. Checkpoints hold the latest reward model
 * (`round_NNNN/reward_model`), and the previous round's is scored on each round's new pairs
 * (`reward/heldout_accuracy`); see marlhf-learner.ts.
 */
export class MARLHFIterTrainer extends IterativeTrainer<MARLHFIterConfig> {
  constructor(options: MARLHFIterTrainerOptions) {
    const args = configFrom(options.args, MARLHFIterConfig, "preference_scoring_reward");
    super(options, { trainerName: "marlhf_iter", configName: "MARLHFIterConfig" }, args, marlhfLearnerFor(args, options));
  }
}

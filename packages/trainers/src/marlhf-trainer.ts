import { MARLHFConfig, type MARLHFConfigInput } from "./config/marlhf-config.js";
import { BaseTrainer } from "./base-trainer.js";
import { marlhfLearnerFor, type MarlhfOptions } from "./marlhf-learner.js";
import { configFrom, type TrainerOptions } from "./trainer-core.js";

export interface MARLHFTrainerOptions extends TrainerOptions, MarlhfOptions {
  args?: MARLHFConfig | MARLHFConfigInput;
}

/**
 * MARLHF: collect preference pairs once from the initial policies (task reward), fit a joint
 * reward model to them, then train every agent with RL against the frozen reward model for
 * num_train_epochs. Evaluation always uses the task reward. Besides MADPO's outputs, the fitted
 * reward model is saved under `<output_dir>/reward_model` (and is `fittedRewardModel` until dispose).
 */
export class MARLHFTrainer extends BaseTrainer<MARLHFConfig> {
  constructor(options: MARLHFTrainerOptions) {
    const args = configFrom(options.args, MARLHFConfig, "rl_algorithm");
    super(options, { trainerName: "marlhf", configName: "MARLHFConfig" }, args, marlhfLearnerFor(args, options));
  }
}

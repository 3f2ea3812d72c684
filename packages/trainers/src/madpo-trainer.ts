import { MADPOConfig, type MADPOConfigInput } from "./config/madpo-config.js";
import { BaseTrainer } from "./base-trainer.js";
import { madpoLearner } from "./madpo-learner.js";
import { configFrom, type TrainerNames, type TrainerOptions } from "./trainer-core.js";

export interface MADPOTrainerOptions extends TrainerOptions {
  args?: MADPOConfig | MADPOConfigInput;
}

/**
 * MADPO: collect preference pairs once from the initial policies, then train every agent on them
 * for num_train_epochs with the multi-agent DPO loss.
 */
export class MADPOTrainer extends BaseTrainer<MADPOConfig> {
  constructor(options: MADPOTrainerOptions) {
    const args = configFrom(options.args, MADPOConfig, "train_batch_size");
    super(options, MADPO_NAMES, args, (parts) => madpoLearner(args, parts, true));
  }
}

const MADPO_NAMES: TrainerNames = { trainerName: "madpo", configName: "MADPOConfig" };

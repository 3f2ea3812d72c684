import { MADPOIterConfig, type MADPOIterConfigInput } from "./config/madpo-iter-config.js";
import { IterativeTrainer, type IterativeTrainerOptions } from "./iterative-trainer.js";
import { madpoLearner } from "./madpo-learner.js";
import { configFrom, type TrainerNames } from "./trainer-core.js";

export interface MADPOIterTrainerOptions extends IterativeTrainerOptions {
  args?: MADPOIterConfig | MADPOIterConfigInput;
}

/**
 * Iterative MADPO: every round, the agents and a comparator answer every item, the replay buffer
 * picks the training pairs, and MADPO trains on them.
 */
export class MADPOIterTrainer extends IterativeTrainer<MADPOIterConfig> {
  constructor(options: MADPOIterTrainerOptions) {
    const args = configFrom(options.args, MADPOIterConfig, "num_iterations");
    super(options, MADPO_ITER_NAMES, args, (parts) => madpoLearner(args, parts, false));
  }
}

const MADPO_ITER_NAMES: TrainerNames = { trainerName: "madpo_iter", configName: "MADPOIterConfig" };

import * as path from "node:path";
import type { CausalLM } from "@pbrl/models";
import type { CollectedPair } from "@pbrl/preference-data";
import type { JointRewardModel } from "@pbrl/reward-model";
import { validateActorCriticFields } from "@pbrl/rl-backends";
import { MARLHFConfig, type MARLHFConfigInput } from "./config/marlhf-config.js";
import type { LearnContext } from "./learn-context.js";
import { MADPOTrainer, type MADPOTrainerOptions } from "./madpo-trainer.js";
import type { ResolvedAgent } from "./agents.js";
import { checkMarlhfSources, learnFromPairs, MarlhfModels, referencesFor, type CriticObjects } from "./marlhf-stage.js";

export interface MARLHFTrainerOptions extends Omit<MADPOTrainerOptions, "args"> {
  args?: MARLHFConfig | MARLHFConfigInput;
  /** Critic sources for maac (one) or iac with use_separate_critic (one per agent): checkpoint ids or model objects; else critic_model_name or the agents' checkpoint. */
  critics?: CriticObjects;
}

/**
 * MARLHF: collect preference pairs once from the initial policies (task reward), fit a joint
 * reward model to them, then train every agent with REINFORCE-family RL against the frozen
 * reward model for num_train_epochs. Evaluation always uses the task reward. Besides MADPO's
 * outputs, the fitted reward model is saved under `<output_dir>/reward_model`.
 */
export class MARLHFTrainer extends MADPOTrainer {
  declare readonly args: MARLHFConfig;
  protected override readonly trainerName: string = "marlhf";
  protected override readonly configName: string = "MARLHFConfig";
  private readonly models = new MarlhfModels();
  private readonly critics: CriticObjects | undefined;

  constructor(options: MARLHFTrainerOptions) {
    const args = isBuilt(options.args) ? options.args : MARLHFConfig(options.args ?? {});
    if (args.rl_algorithm === "maac" || args.rl_algorithm === "iac") validateActorCriticFields(args);
    super({ ...options, args });
    this.critics = options.critics;
  }

  protected override checkAgents(agents: readonly ResolvedAgent[]): void {
    checkMarlhfSources(this.args, agents, this.critics);
  }

  protected override async learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    const a = this.args;
    // Learning happens once, from the initial policies: these are the reference.
    this.models.references ??= referencesFor(a, ctx.agents);
    await learnFromPairs({
      args: a,
      pairs: pairs.map((p) => p.record),
      ctx,
      items: this.options.trainDataset,
      formatters: this.task.formatters,
      references: this.models.references,
      critics: this.critics,
      onRewardModel: (rm) => this.models.setRewardModel(rm),
    });
    await this.models.rewardModel!.save(path.join(a.output_dir, "reward_model"));
  }

  /** The frozen reference models of the KL (reference_kl_enabled), one per actor on reference_devices, once learning has started; until dispose. */
  get frozenReferences(): readonly CausalLM[] | undefined {
    return this.models.references;
  }

  /** The reward model fitted by the last train(), until dispose. */
  get fittedRewardModel(): JointRewardModel | undefined {
    return this.models.rewardModel;
  }

  override dispose(): void {
    this.models.dispose();
    super.dispose();
  }
}

function isBuilt(args: MARLHFConfig | MARLHFConfigInput | undefined): args is MARLHFConfig {
  return args !== undefined && Object.isFrozen(args) && "rl_algorithm" in args && typeof args.train_batch_size === "number";
}

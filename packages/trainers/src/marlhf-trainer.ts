import * as path from "node:path";
import type { CollectedPair } from "@pbrl/preference-data";
import type { CausalLM } from "@pbrl/models";
import type { JointRewardModel } from "@pbrl/reward-model";
import { validateActorCriticFields } from "@pbrl/rl-backends";
import { MARLHFConfig, type MARLHFConfigInput } from "./config/marlhf-config.js";
import type { LearnContext } from "./learn-context.js";
import { MADPOTrainer, type MADPOTrainerOptions } from "./madpo-trainer.js";
import { samplingSettings } from "./sampling-settings.js";
import type { ResolvedAgent } from "./agents.js";
import { checkMarlhfSources, fitRewardModel, referencesFor, rewardModelReward, rewardModelSource, runPolicyLearning, type CriticObjects } from "./marlhf-stage.js";

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
  private rewardModel: JointRewardModel | undefined;
  private references: CausalLM[] | undefined;
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
    const rm = await fitRewardModel({
      args: a,
      source: rewardModelSource(a, ctx.agents),
      pairs: pairs.map((p) => p.record),
      streams: ctx.streams,
      metrics: ctx.metrics,
      step: ctx.counters.envStep,
      progress: ctx.progress,
      label: ctx.label,
    });
    this.rewardModel = rm;
    const fit = rm.evaluate(pairs.map((p) => p.record));
    ctx.log(`pbrl: reward model fitted on ${pairs.length} pairs: accuracy ${fit["reward/accuracy"].toFixed(3)}, margin ${fit["reward/margin"].toFixed(3)}`);
    // Learning happens once, from the initial policies: these are the reference.
    this.references ??= referencesFor(a, ctx.agents.map((ag) => ag.model));
    await runPolicyLearning({
      args: a,
      agents: ctx.agents,
      optimizers: ctx.optimizers,
      reward: rewardModelReward(rm),
      items: this.options.trainDataset,
      formatters: this.task.formatters,
      generation: samplingSettings(a),
      streams: ctx.streams,
      references: this.references,
      critics: this.critics,
      counters: ctx.counters,
      metrics: ctx.metrics,
      evaluate: ctx.evaluate,
      progress: ctx.progress,
      label: ctx.label,
      extra: ctx.extra,
    });
    await rm.save(path.join(a.output_dir, "reward_model"));
  }

  /** The reward model fitted by the last train(), until dispose. */
  get fittedRewardModel(): JointRewardModel | undefined {
    return this.rewardModel;
  }

  override dispose(): void {
    this.rewardModel?.dispose();
    this.rewardModel = undefined;
    this.references?.forEach((m) => m.dispose());
    this.references = undefined;
    super.dispose();
  }
}

function isBuilt(args: MARLHFConfig | MARLHFConfigInput | undefined): args is MARLHFConfig {
  return args !== undefined && Object.isFrozen(args) && "rl_algorithm" in args && typeof args.train_batch_size === "number";
}

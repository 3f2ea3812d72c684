import * as path from "node:path";
import type { CollectedPair } from "@pbrl/preference-data";
import type { JointRewardModel } from "@pbrl/reward-model";
import { MARLHFConfig, type MARLHFConfigInput } from "./config/marlhf-config.js";
import type { LearnContext } from "./learn-context.js";
import { MADPOTrainer, type MADPOTrainerOptions } from "./madpo-trainer.js";
import { samplingSettings } from "./sampling-settings.js";
import { fitRewardModel, rewardModelReward, rewardModelSource, runRlStage } from "./marlhf-stage.js";

export interface MARLHFTrainerOptions extends Omit<MADPOTrainerOptions, "args"> {
  args?: MARLHFConfig | MARLHFConfigInput;
}

const STREAMS = { rewardInit: "reward_model_init", rewardShuffle: "reward_model_shuffle", rollouts: "rl_sampling", shuffle: "rl_shuffle" } as const;

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

  constructor(options: MARLHFTrainerOptions) {
    const args = isBuilt(options.args) ? options.args : MARLHFConfig(options.args ?? {});
    if (args.rl_algorithm === "maac" || args.rl_algorithm === "iac") throw new Error(`rl_algorithm="${args.rl_algorithm}" (actor-critic) is not available yet in this version of pbrl; use magrpo, mareinforce, maremax or marloo`);
    super({ ...options, args });
  }

  protected override async learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    const a = this.args;
    const rm = await fitRewardModel({
      args: a,
      source: rewardModelSource(a, ctx.agents),
      pairs: pairs.map((p) => p.record),
      initRng: ctx.streams.get(STREAMS.rewardInit),
      shuffleRng: ctx.streams.get(STREAMS.rewardShuffle),
      metrics: ctx.metrics,
      step: ctx.counters.envStep,
      progress: ctx.progress,
      label: ctx.label,
    });
    this.rewardModel = rm;
    const fit = rm.evaluate(pairs.map((p) => p.record));
    ctx.log(`pbrl: reward model fitted on ${pairs.length} pairs: accuracy ${fit["reward/accuracy"].toFixed(3)}, margin ${fit["reward/margin"].toFixed(3)}`);
    await runRlStage({
      args: a,
      agents: ctx.agents,
      optimizers: ctx.optimizers,
      reward: rewardModelReward(rm),
      items: this.options.trainDataset,
      formatters: this.task.formatters,
      generation: samplingSettings(a),
      policyRng: ctx.streams.get(STREAMS.rollouts),
      shuffleRng: ctx.streams.get(STREAMS.shuffle),
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
    super.dispose();
  }
}

function isBuilt(args: MARLHFConfig | MARLHFConfigInput | undefined): args is MARLHFConfig {
  return args !== undefined && Object.isFrozen(args) && "rl_algorithm" in args && typeof args.train_batch_size === "number";
}

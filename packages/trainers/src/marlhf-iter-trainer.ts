import { existsSync } from "node:fs";
import * as path from "node:path";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import type { CollectedPair, RewardFunc } from "@pbrl/preference-data";
import { JointRewardModel } from "@pbrl/reward-model";
import { validateActorCriticFields } from "@pbrl/rl-backends";
import { MARLHFIterConfig, type MARLHFIterConfigInput } from "./config/marlhf-config.js";
import { MADPOIterTrainer, type MADPOIterTrainerOptions, type PreferenceScoring, type RoundContext } from "./madpo-iter-trainer.js";
import type { ResolvedAgent } from "./agents.js";
import { loadOn, referenceDevices, rewardModelDevice } from "./role-devices.js";
import { checkMarlhfSources, learnFromPairs, MarlhfModels, rewardModelReward, type CriticObjects } from "./marlhf-stage.js";

export interface MARLHFIterTrainerOptions extends Omit<MADPOIterTrainerOptions, "args"> {
  args?: MARLHFIterConfig | MARLHFIterConfigInput;
  /** Critic sources for maac (one) or iac with use_separate_critic (one per agent): checkpoint ids or model objects; else critic_model_name or the agents' checkpoint. Fresh critics start from them every round. */
  critics?: CriticObjects;
}
const REWARD_MODEL_DIR = "reward_model";

/**
 * Iterative MARLHF: every round the agents and the comparator answer every item, the replay
 * buffer picks the training pairs, a freshly initialised joint reward model is fitted to them,
 * and the agents learn with REINFORCE-family RL against it, frozen. With
 * preference_scoring_reward="reward_model" the latest fitted reward model labels the next
 * round's comparisons (the task reward until one exists); every round file says which did.
 *
 * The latest reward model is kept across the round boundary in any case: before it is replaced,
 * it is scored on the new round's pairs, which it never saw — `reward/heldout_accuracy` (only
 * when the task reward labelled them; a model labelling its own test set would score 100%).
 * Checkpoints hold it (`round_NNNN/reward_model`), so a resumed run scores as the original would.
 */
export class MARLHFIterTrainer extends MADPOIterTrainer {
  declare readonly args: MARLHFIterConfig;
  protected override readonly trainerName: string = "marlhf_iter";
  protected override readonly configName: string = "MARLHFIterConfig";
  private readonly models = new MarlhfModels();
  private readonly critics: CriticObjects | undefined;

  constructor(options: MARLHFIterTrainerOptions) {
    const args = isBuilt(options.args) ? options.args : MARLHFIterConfig(options.args ?? {});
    if (args.rl_algorithm === "maac" || args.rl_algorithm === "iac") validateActorCriticFields(args);
    super({ ...options, args });
    this.critics = options.critics;
  }

  /** The frozen reference: the initial policies as the run saved them (also right after a resume), on reference_devices. */
  private async referencePolicies(ctx: RoundContext): Promise<CausalLM[] | undefined> {
    if (!this.args.reference_kl_enabled) return undefined;
    if (this.models.references === undefined) {
      const devices = referenceDevices(this.args.reference_devices, ctx.agents);
      const refs: CausalLM[] = [];
      try {
        for (let i = 0; i < ctx.agents.length; i++) refs.push((await loadPretrained(path.join(ctx.initialPoliciesDir, `agent_${i}`), loadOn(devices[i]!))).model);
      } catch (err) {
        refs.forEach((m) => m.dispose());
        throw err;
      }
      this.models.references = refs;
    }
    return this.models.references;
  }

  protected override preferenceScoring(round: number): PreferenceScoring {
    const rm = this.models.rewardModel;
    if (this.args.preference_scoring_reward !== "reward_model" || rm === undefined) return super.preferenceScoring(round);
    const score = rewardModelReward(rm);
    // The learned score is both raw and processed: reward_processor belongs to the task reward.
    const rewardFunc: RewardFunc = (completions, context) => score(completions, context);
    return { scorer: "reward_model", rewardFunc, rewardProcessor: undefined };
  }

  protected override checkAgents(agents: readonly ResolvedAgent[]): void {
    checkMarlhfSources(this.args, agents, this.critics);
  }

  protected override async learn(train: readonly CollectedPair[], ctx: RoundContext): Promise<void> {
    const a = this.args;
    const previous = this.models.rewardModel;
    if (previous !== undefined && ctx.scorer === "task" && ctx.newPairs.length > 0) {
      const h = previous.evaluate(ctx.newPairs.map((p) => p.record));
      ctx.metrics.write({ kind: "reward", step: ctx.counters.envStep, ...ctx.extra, "reward/heldout_accuracy": h["reward/accuracy"], "reward/heldout_margin": h["reward/margin"], "reward/heldout_pairs": h.pairs });
      ctx.log(`pbrl: ${ctx.label}the previous reward model ranks ${(h["reward/accuracy"] * 100).toFixed(1)}% of this round's ${h.pairs} new pairs correctly (held out)`);
    }
    this.models.setRewardModel(undefined);
    await learnFromPairs({
      args: a,
      pairs: train.map((p) => p.record),
      ctx,
      items: this.options.trainDataset,
      formatters: this.task.formatters,
      references: await this.referencePolicies(ctx),
      critics: this.critics,
      onRewardModel: (rm) => this.models.setRewardModel(rm),
    });
  }

  protected override async saveLearnerState(dir: string): Promise<void> {
    await this.models.rewardModel?.save(path.join(dir, REWARD_MODEL_DIR));
  }

  protected override async restoreLearnerState(dir: string): Promise<void> {
    const saved = path.join(dir, REWARD_MODEL_DIR);
    const device = rewardModelDevice(this.args.reward_model_device, await this.agents());
    this.models.setRewardModel(existsSync(saved) ? await JointRewardModel.load(saved, { device }) : undefined);
  }

  /** The frozen reference models of the KL (reference_kl_enabled), one per actor on reference_devices, once learning has started; until dispose. */
  get frozenReferences(): readonly CausalLM[] | undefined {
    return this.models.references;
  }

  /** The latest fitted reward model, until dispose. */
  get fittedRewardModel(): JointRewardModel | undefined {
    return this.models.rewardModel;
  }

  override dispose(): void {
    this.models.dispose();
    super.dispose();
  }
}

function isBuilt(args: MARLHFIterConfig | MARLHFIterConfigInput | undefined): args is MARLHFIterConfig {
  return args !== undefined && Object.isFrozen(args) && "preference_scoring_reward" in args && typeof args.train_batch_size === "number";
}

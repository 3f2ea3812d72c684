/**
 * MARLHF's learning step: a fresh joint reward model fitted to the pairs (Bradley–Terry), then RL
 * of every agent against it, frozen (policy-learning.ts). Evaluation stays with the task reward.
 *
 * The latest reward model is kept until the next step replaces it: the iterative trainer scores
 * it on the next round's new pairs first, which it never saw (`reward/heldout_accuracy`; only
 * when the task reward labelled them, since a model labelling its own test set would score
 * 100%), and with preference_scoring_reward="reward_model" it labels the next round's
 * comparisons. Checkpoints hold it, so a resumed run scores as the original would.
 */
import { existsSync } from "node:fs";
import * as path from "node:path";
import type { CausalLM } from "@pbrl/models";
import type { CollectedPair, RewardFunc } from "@pbrl/preference-data";
import { JointRewardModel } from "@pbrl/reward-model";
import { criticDevices } from "@pbrl/rl-backends";
import { criticPlan, type CriticObjects } from "./actor-critic-setup.js";
import type { ResolvedAgent } from "./agents.js";
import type { MARLHFConfig, MARLHFIterConfig } from "./config/marlhf-config.js";
import type { LearnContext, Learner, PreferenceScoring } from "./learner.js";
import { runPolicyLearning } from "./policy-learning.js";
import { loraBackbone } from "./lora-settings.js";
import { fitRewardModel, rewardModelReward, rewardModelSource } from "./reward-model-fit.js";
import { STREAMS } from "./stream-names.js";
import { loadReferences, referencesFor } from "./reference-policies.js";
import { agentDevicesOf, rewardModelDevice } from "./role-devices.js";
import { samplingSettings } from "./sampling-settings.js";
import type { LearnerParts } from "./trainer-core.js";

const REWARD_MODEL_DIR = "reward_model";

/** What the MARLHF trainers take besides the common options. */
export interface MarlhfOptions {
  /** Critic sources for maac (one) or iac with use_separate_critic (one per agent): checkpoint ids or model objects; else critic_model_name or the agents' checkpoint. Fresh critics start from them at every RL stage. */
  critics?: CriticObjects;
}

/** How both MARLHF trainers make their learner from the trainer's parts. */
export function marlhfLearnerFor(args: MARLHFConfig | MARLHFIterConfig, o: MarlhfOptions): (parts: LearnerParts) => MarlhfLearner {
  return (parts) => new MarlhfLearner({ args, parts, critics: o.critics });
}

export class MarlhfLearner implements Learner {
  /** The latest fitted reward model, until the next learning step or dispose. */
  rewardModel: JointRewardModel | undefined;
  /** The frozen initial policies of the reference KL (reference_kl_enabled), once learning has started. */
  references: CausalLM[] | undefined;

  constructor(
    private readonly o: {
      args: MARLHFConfig | MARLHFIterConfig;
      parts: LearnerParts;
      critics: CriticObjects | undefined;
    },
  ) {}

  /** Fails fast, before any sampling, when the reward model's or the critics' source is missing or ambiguous, or critic_devices does not fit the critics. */
  checkAgents(agents: readonly ResolvedAgent[]): void {
    rewardModelSource(this.o.args, agents);
    criticDevices(criticPlan(this.o.args, agents, this.o.critics), this.o.args.critic_devices, agentDevicesOf(agents));
  }

  /** With preference_scoring_reward="reward_model", the latest reward model once there is one. */
  preferenceScoring(): PreferenceScoring | undefined {
    const a = this.o.args;
    const rm = this.rewardModel;
    if (!("preference_scoring_reward" in a) || a.preference_scoring_reward !== "reward_model" || rm === undefined) return undefined;
    const score = rewardModelReward(rm);
    // The learned score is both raw and processed: reward_processor belongs to the task reward.
    const rewardFunc: RewardFunc = (completions, context) => score(completions, context);
    return { scorer: "reward_model", rewardFunc, rewardProcessor: undefined };
  }

  async learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    const a = this.o.args;
    const previous = this.rewardModel;
    if (previous !== undefined && ctx.scorer !== "reward_model" && ctx.newPairs.length > 0) {
      const h = previous.evaluate(ctx.newPairs.map((p) => p.record));
      ctx.metrics.write({
        kind: "reward",
        step: ctx.counters.envStep,
        ...ctx.extra,
        "reward/heldout_accuracy": h["reward/accuracy"],
        "reward/heldout_margin": h["reward/margin"],
        "reward/heldout_pairs": h.pairs,
      });
      ctx.log(
        `pbrl: ${ctx.label}the previous reward model ranks ${(h["reward/accuracy"] * 100).toFixed(1)}% of this round's ${h.pairs} new pairs correctly (held out)`,
      );
    }
    this.setRewardModel(undefined);
    const references = await this.referencePolicies(ctx);
    const records = pairs.map((p) => p.record);
    // The learner owns the model as soon as it exists, also if learning fails.
    // use_peft: the reward model's backbone is agent 0's base with an adapter of its own (one base in memory).
    const lora = a.use_peft && a.reward_model_name === null ? loraBackbone(ctx.agents[0]!, a, ctx.streams.get(STREAMS.rewardLoraInit)) : undefined;
    const rm = await fitRewardModel({
      args: a,
      source: lora ?? rewardModelSource(a, ctx.agents),
      device: rewardModelDevice(a.reward_model_device, ctx.agents),
      pairs: records,
      streams: ctx.streams,
      metrics: ctx.metrics,
      step: ctx.counters.envStep,
      progress: ctx.progress,
      label: ctx.label,
      extra: ctx.extra,
    }).finally(() => lora?.model.dispose()); // the reward model holds its own copy of the adapter
    this.setRewardModel(rm);
    const fit = rm.evaluate(records);
    ctx.log(
      `pbrl: ${ctx.label}reward model fitted on ${records.length} pairs: accuracy ${fit["reward/accuracy"].toFixed(3)}, margin ${fit["reward/margin"].toFixed(3)}`,
    );
    await runPolicyLearning({
      args: a,
      ctx,
      execution: this.o.parts.execution,
      reward: rewardModelReward(rm),
      items: this.o.parts.trainItems(),
      formatters: this.o.parts.task.formatters,
      policies: this.o.parts.task.policies(ctx.agents),
      generation: samplingSettings(a),
      references,
      critics: this.o.critics,
    });
  }

  async saveState(dir: string): Promise<void> {
    await this.rewardModel?.save(path.join(dir, REWARD_MODEL_DIR));
  }

  async restoreState(dir: string, agents: readonly ResolvedAgent[]): Promise<void> {
    const saved = path.join(dir, REWARD_MODEL_DIR);
    const device = rewardModelDevice(this.o.args.reward_model_device, agents);
    this.setRewardModel(existsSync(saved) ? await JointRewardModel.load(saved, { device }) : undefined);
  }

  dispose(): void {
    this.setRewardModel(undefined);
    this.references?.forEach((m) => m.dispose());
    this.references = undefined;
  }

  /** Replaces the reward model, freeing the one it held. */
  private setRewardModel(rm: JointRewardModel | undefined): void {
    if (this.rewardModel !== rm) this.rewardModel?.dispose();
    this.rewardModel = rm;
  }

  /**
   * The frozen reference of the KL: the initial policies as the run saved them (iterative, also
   * right after a resume), or frozen copies of the agents when learning starts from them (the
   * base trainers). Made once, kept until dispose.
   */
  private async referencePolicies(ctx: LearnContext): Promise<CausalLM[] | undefined> {
    this.references ??=
      ctx.initialPoliciesDir === undefined ? referencesFor(this.o.args, ctx.agents) : await loadReferences(this.o.args, ctx.agents, ctx.initialPoliciesDir);
    return this.references;
  }
}

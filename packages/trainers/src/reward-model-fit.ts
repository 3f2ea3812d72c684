/**
 * MARLHF's first step: a joint reward model with a fresh head on its source backbone, fitted to
 * the preference pairs (Bradley–Terry), then frozen and used as the RL stage's reward.
 */
import type { RngStreams } from "@pbrl/core-tensor";
import type { PairRecord } from "@pbrl/preference-data";
import type { Pretrained } from "@pbrl/models";
import { JointRewardModel } from "@pbrl/reward-model";
import { resolveRewardModelSource, type JointReward } from "@pbrl/rl-backends";
import type { ResolvedAgent } from "./agents.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import type { MetricsLog } from "./metrics-log.js";
import { ProgressBar, type ProgressMode } from "./progress.js";

/** The config fields reward-model fitting reads. */
export type RewardFields = Pick<
  MARLHFConfig,
  | "reward_model_name"
  | "reward_model_device"
  | "reward_learning_rate"
  | "reward_num_train_epochs"
  | "reward_train_batch_size"
  | "reward_max_length"
  | "reward_freeze_backbone"
>;

/** The RNG streams of reward-model fitting (names are part of checkpoints: never rename). */
const STREAMS = { rewardInit: "reward_model_init", rewardShuffle: "reward_model_shuffle" } as const;

/**
 * Where the reward model's backbone comes from: `reward_model_name`, else the checkpoint the
 * agents were loaded from. Model objects carry no loadable identifier, so they need the name.
 */
export function rewardModelSource(args: Pick<MARLHFConfig, "reward_model_name">, agents: readonly ResolvedAgent[]): string {
  return resolveRewardModelSource({ rewardModelName: args.reward_model_name, agentModelIds: agents.map((ag) => ag.checkpoint) });
}

/**
 * A reward model with a fresh head on the source backbone, fitted to `pairs`. One metrics line per
 * epoch (`reward/loss`, `reward/accuracy`, `reward/margin`, pair-weighted over its batches).
 */
export async function fitRewardModel(o: {
  args: RewardFields;
  /** A checkpoint (reward_model_name, or agent 0's), or (use_peft) a LoRA view of agent 0's base. */
  source: string | Pretrained;
  /** reward_model_device resolved (see role-devices.ts). */
  device: string;
  pairs: readonly PairRecord[];
  streams: RngStreams;
  metrics: MetricsLog;
  step: number;
  progress: ProgressMode;
  label: string;
  extra?: Record<string, number>;
}): Promise<JointRewardModel> {
  const a = o.args;
  const rm = await JointRewardModel.create({
    source: o.source,
    device: o.device,
    rng: o.streams.get(STREAMS.rewardInit),
    freezeBackbone: a.reward_freeze_backbone,
    ...(a.reward_max_length !== null && { maxLength: a.reward_max_length }),
  });
  try {
    const batches = Math.ceil(o.pairs.length / a.reward_train_batch_size);
    let bar: ProgressBar | undefined;
    const fit = await rm.train(o.pairs, {
      learningRate: a.reward_learning_rate,
      epochs: a.reward_num_train_epochs,
      batchSize: a.reward_train_batch_size,
      rng: o.streams.get(STREAMS.rewardShuffle),
      onBatch: (m) => {
        if (m.batch === 1) bar = new ProgressBar(`${o.label}reward model ${m.epoch}/${a.reward_num_train_epochs}`, batches, o.progress);
        bar?.update(m.batch, `loss ${m["reward/loss"].toFixed(4)} acc ${m["reward/accuracy"].toFixed(2)}`);
        if (m.batch === batches) bar?.finish();
      },
    });
    for (const e of fit.epochs)
      o.metrics.write({
        kind: "reward",
        step: o.step,
        ...o.extra,
        "reward/epoch": e.epoch,
        "reward/loss": e["reward/loss"],
        "reward/accuracy": e["reward/accuracy"],
        "reward/margin": e["reward/margin"],
        "reward/num_pairs": o.pairs.length,
      });
    return rm;
  } catch (err) {
    rm.dispose();
    throw err;
  }
}

/** The frozen reward model as the RL stage's joint reward: one score per generation index. */
export function rewardModelReward(rm: JointRewardModel): JointReward {
  return (completions, context) => rm.scoreRollouts(context.prompts, completions);
}

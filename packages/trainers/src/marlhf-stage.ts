/**
 * The two MARLHF steps both MARLHF trainers run on their pairs: fit a fresh joint reward model
 * (Bradley–Terry), then REINFORCE-family policy learning against it, frozen. Evaluation stays with
 * the task reward (the caller's `evaluate`).
 */
import type { AdamW, RngStream } from "@pbrl/core-tensor";
import { PolicySampler, type Formatter, type GenerationSettings, type PairRecord, type TaskItem } from "@pbrl/preference-data";
import { JointRewardModel } from "@pbrl/reward-model";
import { runRlEpochs, type JointReward, type ReturnShaping, type Rollout, type BatchPosition } from "@pbrl/rl-backends";
import type { ResolvedAgent } from "./agents.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import type { TrainingCounters } from "./madpo-epochs.js";
import type { MetricsLog } from "./metrics-log.js";
import { ProgressBar } from "./progress.js";

type RewardFields = Pick<MARLHFConfig, "reward_model_name" | "reward_learning_rate" | "reward_num_train_epochs" | "reward_train_batch_size" | "reward_max_length" | "reward_freeze_backbone">;

/**
 * Where the reward model's backbone comes from: `reward_model_name`, else the checkpoint the
 * agents were loaded from. Model objects carry no loadable identifier, so they need the name.
 */
export function rewardModelSource(args: Pick<MARLHFConfig, "reward_model_name">, agents: readonly ResolvedAgent[]): string {
  if (args.reward_model_name !== null) return args.reward_model_name;
  const checkpoint = agents[0]?.checkpoint;
  if (checkpoint === undefined) {
    throw new Error(`reward_model_name is required: the agents are model objects (${agents[0]?.source ?? "none"}), so there is no checkpoint to load the reward model's backbone from; set reward_model_name to a checkpoint folder or hub id`);
  }
  return checkpoint;
}

/**
 * A reward model with a fresh head on the source backbone, fitted to `pairs`. One metrics line per
 * epoch (`reward/loss`, `reward/accuracy`, `reward/margin`, pair-weighted over its batches).
 */
export async function fitRewardModel(o: {
  args: RewardFields;
  source: string;
  pairs: readonly PairRecord[];
  initRng: RngStream;
  shuffleRng: RngStream;
  metrics: MetricsLog;
  step: number;
  progress: boolean;
  label: string;
  extra?: Record<string, number>;
}): Promise<JointRewardModel> {
  const a = o.args;
  const rm = await JointRewardModel.create({ source: o.source, rng: o.initRng, freezeBackbone: a.reward_freeze_backbone, ...(a.reward_max_length !== null && { maxLength: a.reward_max_length }) });
  try {
    const batches = Math.ceil(o.pairs.length / a.reward_train_batch_size);
    let bar: ProgressBar | undefined;
    const fit = await rm.train(o.pairs, {
      learningRate: a.reward_learning_rate,
      epochs: a.reward_num_train_epochs,
      batchSize: a.reward_train_batch_size,
      rng: o.shuffleRng,
      onBatch: (m) => {
        if (m.batch === 1) bar = new ProgressBar(`${o.label}reward model ${m.epoch}/${a.reward_num_train_epochs}`, batches, o.progress);
        bar?.update(m.batch, `loss ${m["reward/loss"].toFixed(4)} acc ${m["reward/accuracy"].toFixed(2)}`);
        if (m.batch === batches) bar?.finish();
      },
    });
    for (const e of fit.epochs) o.metrics.write({ kind: "reward", step: o.step, ...o.extra, "reward/epoch": e.epoch, "reward/loss": e["reward/loss"], "reward/accuracy": e["reward/accuracy"], "reward/margin": e["reward/margin"], "reward/num_pairs": o.pairs.length });
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

type RlFields = Pick<MARLHFConfig, "num_generations" | "advantage_mode" | "advantage_normalization" | "num_train_epochs" | "train_batch_size" | "eval_interval" | "logging_steps" | "reward_concurrency">;

/**
 * REINFORCE-family policy learning against a reward: num_train_epochs passes over the task items
 * in seeded shuffles, train_batch_size items per update, num_generations samples per agent per
 * item. Evaluation runs before an update whenever updates % eval_interval == 0 (counted over the
 * whole run, as MADPO's); env_step grows by the joint reward evaluations.
 */
export async function runRlStage(o: {
  args: RlFields;
  agents: readonly ResolvedAgent[];
  optimizers: readonly AdamW[];
  reward: JointReward;
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  generation: GenerationSettings;
  policyRng: RngStream;
  shuffleRng: RngStream;
  counters: TrainingCounters;
  metrics: MetricsLog;
  evaluate: () => Promise<void>;
  progress: boolean;
  label: string;
  extra?: Record<string, number>;
  shaping?: (rollouts: readonly Rollout[], position: BatchPosition) => ReturnShaping | Promise<ReturnShaping>;
}): Promise<void> {
  const a = o.args;
  const c = o.counters;
  let bar: ProgressBar | undefined;
  await runRlEpochs({
    agents: o.agents.map((ag, i) => ({ model: ag.model, optimizer: o.optimizers[i]!, padTokenId: ag.padTokenId })),
    items: o.items,
    formatters: o.formatters,
    sampler: new PolicySampler(o.agents, o.generation, o.policyRng),
    numGenerations: a.num_generations,
    reward: o.reward,
    rewardConcurrency: a.reward_concurrency,
    mode: a.advantage_mode,
    normalize: a.advantage_normalization,
    numTrainEpochs: a.num_train_epochs,
    trainBatchSize: a.train_batch_size,
    shuffleRng: o.shuffleRng,
    label: o.label,
    ...(o.shaping !== undefined && { shaping: o.shaping }),
    beforeBatch: async (p) => {
      if (p.batch === 1) bar = new ProgressBar(`${o.label}RL epoch ${p.epoch}/${a.num_train_epochs}`, p.batchesPerEpoch, o.progress);
      if (a.eval_interval > 0 && c.updates % a.eval_interval === 0) await o.evaluate();
    },
    onBatch: (r) => {
      c.updates += 1;
      c.envStep += r.jointEvaluations;
      if (a.logging_steps <= 1 || c.lastLogged === undefined || c.envStep - c.lastLogged >= a.logging_steps) {
        c.lastLogged = c.envStep;
        o.metrics.write({ kind: "train", step: c.envStep, ...o.extra, epoch: r.epoch, update: c.updates, ...r.metrics });
      }
      bar?.update(r.batch, `reward ${r.metrics["turn_1/reward_mean"]?.toFixed(3) ?? "—"}`);
      if (r.batch === r.batchesPerEpoch) bar?.finish();
    },
  });
}

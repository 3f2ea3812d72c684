/**
 * The two MARLHF steps both MARLHF trainers run on their pairs: fit a fresh joint reward model
 * (Bradley–Terry), then REINFORCE-family policy learning against it, frozen. Evaluation stays with
 * the task reward (the caller's `evaluate`).
 */
import type { AdamW, RngStream, RngStreams } from "@pbrl/core-tensor";
import { CausalLM, loadPretrained, type Pretrained } from "@pbrl/models";
import { PolicySampler, type Formatter, type GenerationSettings, type PairRecord, type TaskItem } from "@pbrl/preference-data";
import { JointRewardModel } from "@pbrl/reward-model";
import {
  ActorValueHead,
  Critic,
  criticDevices,
  frozenReference,
  referenceKlShaping,
  resolveCriticSources,
  resolveRewardModelSource,
  runActorCriticEpochs,
  runRlEpochs,
  type ActorCriticSetup,
  type BatchPosition,
  type BatchReport,
  type CriticSource,
  type JointReward,
} from "@pbrl/rl-backends";
import type { ResolvedAgent } from "./agents.js";
import { agentDevicesOf, loadOn, referenceDevices, rewardModelDevice } from "./role-devices.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import type { TrainingCounters } from "./madpo-epochs.js";
import type { LearnContext } from "./learn-context.js";
import type { MetricsLog } from "./metrics-log.js";
import { ProgressBar, type ProgressMode } from "./progress.js";
import { samplingSettings } from "./sampling-settings.js";

type RewardFields = Pick<MARLHFConfig, "reward_model_name" | "reward_model_device" | "reward_learning_rate" | "reward_num_train_epochs" | "reward_train_batch_size" | "reward_max_length" | "reward_freeze_backbone">;

/**
 * Where the reward model's backbone comes from: `reward_model_name`, else the checkpoint the
 * agents were loaded from. Model objects carry no loadable identifier, so they need the name.
 */
function rewardModelSource(args: Pick<MARLHFConfig, "reward_model_name">, agents: readonly ResolvedAgent[]): string {
  return resolveRewardModelSource({ reward_model_name: args.reward_model_name, agent_model_ids: agents.map((ag) => ag.checkpoint) });
}

/** The RNG streams of the MARLHF stages (names are part of checkpoints: never rename). */
const STREAMS = { rewardInit: "reward_model_init", rewardShuffle: "reward_model_shuffle", rollouts: "rl_sampling", shuffle: "rl_shuffle", critic: "critic_init" } as const;

/**
 * A reward model with a fresh head on the source backbone, fitted to `pairs`. One metrics line per
 * epoch (`reward/loss`, `reward/accuracy`, `reward/margin`, pair-weighted over its batches).
 */
async function fitRewardModel(o: {
  args: RewardFields;
  source: string;
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
  const rm = await JointRewardModel.create({ source: o.source, device: o.device, rng: o.streams.get(STREAMS.rewardInit), freezeBackbone: a.reward_freeze_backbone, ...(a.reward_max_length !== null && { maxLength: a.reward_max_length }) });
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

/** The config fields policy learning reads (shared by MARLHFConfig and MARLHFIterConfig). */
type PolicyFields = Pick<
  MARLHFConfig,
  | "rl_algorithm" | "num_generations" | "advantage_mode" | "advantage_normalization" | "num_train_epochs" | "train_batch_size" | "rollout_buffer_size"
  | "agent_learning_rate" | "reward_concurrency" | "eval_interval" | "logging_steps" | "reference_kl_enabled" | "reference_kl_coef"
  | "use_separate_critic" | "critic_model_name" | "critic_devices" | "critic_learning_rate" | "critic_type" | "value_loss_coef" | "value_clip_range" | "critic_value_head_hidden_dim" | "value_head_hidden_dim"
>;

/** Where actor-critic critics may come from besides the config: checkpoint ids or model objects. */
export type CriticObjects = readonly (string | CausalLM | Pretrained)[];

/**
 * Fresh critics for one policy-learning stage, as CoMLRL builds a new actor-critic trainer (and
 * so new critics) every time: MAAC's centralized critic, IAC's per-agent critics, or IAC's value
 * heads on the actors' own backbones.
 */
async function buildActorCritic(a: PolicyFields, agents: readonly ResolvedAgent[], rng: RngStream, critics: CriticObjects | undefined): Promise<{ setup: ActorCriticSetup; dispose: () => void }> {
  const plan = criticPlan(a, agents, critics);
  const devices = criticDevices(plan, a.critic_devices, agentDevicesOf(agents));
  const learningRate = a.critic_learning_rate ?? a.agent_learning_rate;
  const made: { dispose: () => void }[] = [];
  const dispose = () => made.forEach((m) => m.dispose());
  const critic = async (source: CriticSource, device: string): Promise<Critic> => {
    let c: Critic;
    if (source.kind === "id") {
      const p = await loadPretrained(source.id, loadOn(device));
      if (p.tokenizer === undefined) {
        p.model.dispose();
        throw new Error(`${source.field}: ${source.id} has no tokenizer.json; a critic reads text with its backbone's tokenizer`);
      }
      c = Critic.create({ backbone: p.model, tokenizer: p.tokenizer, headHiddenDim: a.critic_value_head_hidden_dim, rng, learningRate, copy: false });
    } else {
      const v = source.value as CausalLM | Pretrained;
      const backbone = v instanceof CausalLM ? v : v.model;
      // A bare model object reads the agents' text with the agents' tokenizer.
      const tokenizer = v instanceof CausalLM ? agents[0]!.tokenizer : (v.tokenizer ?? agents[0]!.tokenizer);
      c = Critic.create({ backbone, tokenizer, headHiddenDim: a.critic_value_head_hidden_dim, rng, learningRate, device });
    }
    made.push(c);
    return c;
  };
  try {
    if (plan.algorithm === "maac") return { setup: { algorithm: "maac", critic: await critic(plan.critic, devices[0]!) }, dispose };
    if (plan.algorithm === "iac" && plan.layout === "separate") {
      const list: Critic[] = [];
      for (const [i, s] of plan.critics.entries()) list.push(await critic(s, devices[i]!));
      return { setup: { algorithm: "iac", layout: "separate", critics: list }, dispose };
    }
    if (plan.algorithm === "iac") {
      // A value head reads its actor's hidden states: it lives where the actor does.
      const valueHeads = agents.map((ag) => ActorValueHead.create({ hiddenSize: ag.model.config.hiddenSize, hiddenDim: a.value_head_hidden_dim, rng, learningRate: a.agent_learning_rate, device: ag.model.device() }));
      made.push(...valueHeads);
      return { setup: { algorithm: "iac", layout: "shared", valueHeads }, dispose };
    }
    throw new Error(`rl_algorithm=${a.rl_algorithm} is not an actor-critic backend`);
  } catch (err) {
    dispose();
    throw err;
  }
}

/**
 * Policy learning against a reward for num_train_epochs passes over the task items, in seeded
 * shuffles, train_batch_size items per update, num_generations samples per agent per item: the
 * REINFORCE family (magrpo, mareinforce, maremax, marloo) or actor-critic (maac, iac, with fresh
 * critics). With reference_kl_enabled the frozen references' KL, times reference_kl_coef, is
 * subtracted from the returns. Evaluation runs before an update whenever updates % eval_interval
 * == 0 (counted over the whole run, as MADPO's); env_step grows by the joint reward evaluations.
 */
async function runPolicyLearning(o: {
  args: PolicyFields;
  agents: readonly ResolvedAgent[];
  optimizers: readonly AdamW[];
  reward: JointReward;
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  generation: GenerationSettings;
  streams: RngStreams;
  counters: TrainingCounters;
  metrics: MetricsLog;
  evaluate: () => Promise<void>;
  progress: ProgressMode;
  label: string;
  extra?: Record<string, number>;
  /** One frozen copy of each agent's initial policy, when reference_kl_enabled. */
  references?: readonly CausalLM[] | undefined;
  critics?: CriticObjects | undefined;
}): Promise<void> {
  const a = o.args;
  const c = o.counters;
  const trainable = o.agents.map((ag, i) => ({ model: ag.model, optimizer: o.optimizers[i]!, padTokenId: ag.padTokenId }));
  let bar: ProgressBar | undefined;
  const common = {
    agents: trainable,
    items: o.items,
    formatters: o.formatters,
    sampler: new PolicySampler(o.agents, o.generation, o.streams.get(STREAMS.rollouts)),
    numGenerations: a.num_generations,
    reward: o.reward,
    rewardConcurrency: a.reward_concurrency,
    normalize: a.advantage_normalization,
    numTrainEpochs: a.num_train_epochs,
    trainBatchSize: a.train_batch_size,
    shuffleRng: o.streams.get(STREAMS.shuffle),
    label: o.label,
    ...(a.reference_kl_enabled && o.references !== undefined && { shaping: referenceKlShaping({ agents: trainable, references: o.references, coef: a.reference_kl_coef }) }),
    beforeBatch: async (p: BatchPosition) => {
      if (p.batch === 1) bar = new ProgressBar(`${o.label}RL epoch ${p.epoch}/${a.num_train_epochs}`, p.batchesPerEpoch, o.progress);
      if (a.eval_interval > 0 && c.updates % a.eval_interval === 0) await o.evaluate();
    },
    onBatch: (r: BatchReport) => {
      c.updates += r.metrics["rl/updates"] ?? 1;
      c.envStep += r.jointEvaluations;
      if (a.logging_steps <= 1 || c.lastLogged === undefined || c.envStep - c.lastLogged >= a.logging_steps) {
        c.lastLogged = c.envStep;
        o.metrics.write({ kind: "train", step: c.envStep, ...o.extra, epoch: r.epoch, update: c.updates, ...r.metrics });
      }
      bar?.update(r.batch, `reward ${r.metrics["turn_1/reward_mean"]?.toFixed(3) ?? "—"}`);
      if (r.batch === r.batchesPerEpoch) bar?.finish();
    },
  };
  if (a.rl_algorithm !== "maac" && a.rl_algorithm !== "iac") {
    await runRlEpochs({ ...common, mode: a.advantage_mode });
    return;
  }
  const ac = await buildActorCritic(a, o.agents, o.streams.get(STREAMS.critic), o.critics);
  try {
    await runActorCriticEpochs({ ...common, setup: ac.setup, criticType: a.critic_type, valueLossCoef: a.value_loss_coef, ...(a.rl_algorithm === "iac" && { valueClipRange: a.value_clip_range }), rolloutBufferSize: a.rollout_buffer_size });
  } finally {
    ac.dispose();
  }
}

function criticPlan(a: PolicyFields, agents: readonly ResolvedAgent[], critics: CriticObjects | undefined) {
  return resolveCriticSources({ rl_algorithm: a.rl_algorithm, num_agents: agents.length, use_separate_critic: a.use_separate_critic, critic_model_name: a.critic_model_name, critics: critics ?? null, agent_model_ids: agents.map((ag) => ag.checkpoint) });
}

/** Fails fast, before any sampling, when the reward model's or the critics' source is missing or ambiguous, or critic_devices does not fit the critics. */
export function checkMarlhfSources(a: PolicyFields & Pick<MARLHFConfig, "reward_model_name">, agents: readonly ResolvedAgent[], critics: CriticObjects | undefined): void {
  rewardModelSource(a, agents);
  criticDevices(criticPlan(a, agents, critics), a.critic_devices, agentDevicesOf(agents));
}

/**
 * One MARLHF learning stage on `pairs`: a fresh reward model fitted to them, then policy learning
 * against it, frozen. `onRewardModel` receives the model as soon as it exists (the trainer owns it
 * from then on, also if learning fails).
 */
export async function learnFromPairs(o: {
  args: PolicyFields & RewardFields & { max_new_tokens: number; temperature: number; top_p: number; top_k: number | null; generation_batch_size: number; max_prompt_length: number | null };
  pairs: readonly PairRecord[];
  ctx: LearnContext;
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  references: readonly CausalLM[] | undefined;
  critics: CriticObjects | undefined;
  onRewardModel: (rm: JointRewardModel) => void;
}): Promise<void> {
  const { args: a, ctx } = o;
  const rm = await fitRewardModel({ args: a, source: rewardModelSource(a, ctx.agents), device: rewardModelDevice(a.reward_model_device, ctx.agents), pairs: o.pairs, streams: ctx.streams, metrics: ctx.metrics, step: ctx.counters.envStep, progress: ctx.progress, label: ctx.label, extra: ctx.extra });
  o.onRewardModel(rm);
  const fit = rm.evaluate(o.pairs);
  ctx.log(`pbrl: ${ctx.label}reward model fitted on ${o.pairs.length} pairs: accuracy ${fit["reward/accuracy"].toFixed(3)}, margin ${fit["reward/margin"].toFixed(3)}`);
  await runPolicyLearning({
    args: a,
    agents: ctx.agents,
    optimizers: ctx.optimizers,
    reward: rewardModelReward(rm),
    items: o.items,
    formatters: o.formatters,
    generation: samplingSettings(a),
    streams: ctx.streams,
    references: o.references,
    critics: o.critics,
    counters: ctx.counters,
    metrics: ctx.metrics,
    evaluate: ctx.evaluate,
    progress: ctx.progress,
    label: ctx.label,
    extra: ctx.extra,
  });
}

/** Frozen copies of the agents' initial policies for the reference KL, on reference_devices (none when it is off). */
export function referencesFor(a: Pick<MARLHFConfig, "reference_kl_enabled" | "reference_devices">, initial: readonly ResolvedAgent[]): CausalLM[] | undefined {
  if (!a.reference_kl_enabled) return undefined;
  const devices = referenceDevices(a.reference_devices, initial);
  const refs: CausalLM[] = [];
  try {
    for (const [i, ag] of initial.entries()) refs.push(frozenReference(ag.model, devices[i]));
  } catch (err) {
    refs.forEach((m) => m.dispose());
    throw err;
  }
  return refs;
}

/** What a MARLHF trainer keeps across learning stages: the latest reward model and the frozen references. */
export class MarlhfModels {
  rewardModel: JointRewardModel | undefined;
  references: CausalLM[] | undefined;

  /** Replaces the reward model, freeing the one it held. */
  setRewardModel(rm: JointRewardModel | undefined): void {
    if (this.rewardModel !== rm) this.rewardModel?.dispose();
    this.rewardModel = rm;
  }

  dispose(): void {
    this.setRewardModel(undefined);
    this.references?.forEach((m) => m.dispose());
    this.references = undefined;
  }
}

/**
 * MARLHF's second step: on-policy RL of every agent against a frozen reward, for num_train_epochs
 * passes over the task items in seeded shuffles, num_generations samples per agent per item: the
 * REINFORCE family (magrpo, mareinforce, maremax, marloo) with CoMLRL's rollout buffer, or
 * actor-critic (maac, iac, with fresh critics). With reference_kl_enabled the frozen references'
 * KL, times reference_kl_coef, is subtracted from the returns.
 *
 * Evaluation follows CoMLRL's MAGRPO and actor-critic loops: before the item whose position
 * within the epoch is a multiple of eval_interval, so at the start of every epoch too. env_step
 * grows by the joint reward evaluations (num_generations per item).
 *
 * parallel_training="mp": the REINFORCE family samples, scores and steps each agent in its own
 * worker thread (bit for bit the same run on wasm and cpu); the actor-critic algorithms keep
 * their RL stage in this thread, since MAAC's shared critic learns from every agent's samples
 * in each update (CoMLRL runs MAAC's updates one agent after the other for the same reason) and
 * pbrl steps IAC's critics with its actors.
 */
import type { CausalLM } from "@pbrl/models";
import { PolicySampler, type CandidateSampler, type Formatter, type GenerationSettings, type Policy, type TaskItem } from "@pbrl/preference-data";
import {
  isReinforceAlgorithm,
  referenceKlShaping,
  runActorCriticEpochs,
  runRlEpochs,
  type BatchPosition,
  type BatchReport,
  type JointReward,
  type PolicyScorer,
} from "@pbrl/rl-backends";
import { buildActorCritic, type CriticFields, type CriticObjects } from "./actor-critic-setup.js";
import type { MARLHFConfig } from "./config/marlhf-config.js";
import type { LearnContext } from "./learner.js";
import type { AgentExecution } from "./parallel/agent-execution.js";
import { ProgressBar } from "./progress.js";
import { passesLoggingGate } from "./training-counters.js";

/** The config fields policy learning reads (shared by MARLHFConfig and MARLHFIterConfig). */
export type PolicyFields = CriticFields &
  Pick<
    MARLHFConfig,
    | "num_generations"
    | "advantage_mode"
    | "advantage_normalization"
    | "num_train_epochs"
    | "train_batch_size"
    | "gradient_accumulation_steps"
    | "rollout_buffer_size"
    | "reward_concurrency"
    | "eval_interval"
    | "logging_steps"
    | "reference_kl_enabled"
    | "reference_kl_coef"
    | "critic_type"
    | "value_loss_coef"
    | "value_clip_range"
  >;

/** The RNG streams of policy learning (names are part of checkpoints: never rename). */
const STREAMS = { rollouts: "rl_sampling", shuffle: "rl_shuffle", critic: "critic_init" } as const;

/** CoMLRL's schedule: the env_step of each evaluation due before the items of a batch (position within the epoch a multiple of eval_interval). */
export function evaluationSteps(p: Pick<BatchPosition, "firstItem" | "items">, evalInterval: number, envStep: number, generations: number): number[] {
  if (evalInterval <= 0) return [];
  const steps: number[] = [];
  for (let k = 0; k < p.items; k++) if ((p.firstItem + k) % evalInterval === 0) steps.push(envStep + k * generations);
  return steps;
}

export async function runPolicyLearning(o: {
  args: PolicyFields;
  ctx: LearnContext;
  execution: AgentExecution;
  reward: JointReward;
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  /** The agents as their samplers take them (TaskSetup.policies: with their rendered prompts). */
  policies: readonly Policy[];
  generation: GenerationSettings;
  /** One frozen copy of each agent's initial policy, when reference_kl_enabled. */
  references: readonly CausalLM[] | undefined;
  critics: CriticObjects | undefined;
}): Promise<void> {
  const { args: a, ctx } = o;
  const c = ctx.counters;
  const trainable = ctx.agents.map((ag, i) => ({ model: ag.model, optimizer: ctx.optimizers[i]!, padTokenId: ag.padTokenId }));
  let bar: ProgressBar | undefined;
  /** The loop's settings, hooks and reporting, given the agents' sampler, scorer and a way to bring the trainer's weights up to date. */
  const common = (sampler: CandidateSampler, scorer: PolicyScorer | undefined, syncWeights: () => Promise<void>) => ({
    items: o.items,
    formatters: o.formatters,
    sampler,
    numGenerations: a.num_generations,
    reward: o.reward,
    rewardConcurrency: a.reward_concurrency,
    normalize: a.advantage_normalization,
    numTrainEpochs: a.num_train_epochs,
    // gradient_accumulation_steps: mini-batches of k × train_batch_size items, one optimizer step
    // each, their gradients summed over forward passes of train_batch_size items' samples.
    trainBatchSize: a.train_batch_size * a.gradient_accumulation_steps,
    ...(a.gradient_accumulation_steps > 1 ? { maxRowsPerForward: a.train_batch_size * a.num_generations } : {}),
    rolloutBufferSize: a.rollout_buffer_size,
    shuffleRng: ctx.streams.get(STREAMS.shuffle),
    label: ctx.label,
    ...(a.reference_kl_enabled &&
      o.references !== undefined && { shaping: referenceKlShaping({ agents: trainable, references: o.references, coef: a.reference_kl_coef, scorer }) }),
    beforeBatch: async (p: BatchPosition) => {
      if (p.batch === 1) bar = new ProgressBar(`${ctx.label}RL epoch ${p.epoch}/${a.num_train_epochs}`, p.batchesPerEpoch, ctx.progress);
      const due = evaluationSteps(p, a.eval_interval, c.envStep, a.num_generations);
      if (due.length > 0) await syncWeights();
      for (const step of due) await ctx.evaluate(step);
    },
    onBatch: (r: BatchReport) => {
      c.updates += r.metrics["rl/updates"] ?? 1;
      c.envStep += r.jointEvaluations;
      if (passesLoggingGate(c, c.envStep, a.logging_steps))
        ctx.metrics.write({ kind: "train", step: c.envStep, ...ctx.extra, epoch: r.epoch, update: c.updates, ...r.metrics });
      bar?.update(r.batch, `reward ${r.metrics["turn_1/reward_mean"]?.toFixed(3) ?? "—"}`);
      if (r.batch === r.batchesPerEpoch) bar?.finish();
    },
  });
  const rng = ctx.streams.get(STREAMS.rollouts);
  if (isReinforceAlgorithm(a.rl_algorithm)) {
    await o.execution.train(trainable, (team, syncWeights) =>
      runRlEpochs({ ...common(team.sampler(o.policies, o.generation, rng), team, syncWeights), agents: team, mode: a.advantage_mode }),
    );
    return;
  }
  if (o.execution.inWorkers)
    ctx.log(
      `pbrl: ${ctx.label}rl_algorithm=${a.rl_algorithm} trains in this thread (parallel_training="mp" runs the REINFORCE family's RL stage in worker threads)`,
    );
  const ac = await buildActorCritic(a, ctx.agents, ctx.streams.get(STREAMS.critic), o.critics);
  try {
    await runActorCriticEpochs({
      ...common(new PolicySampler(o.policies, o.generation, rng), undefined, async () => {}),
      agents: trainable,
      setup: ac.setup,
      criticType: a.critic_type,
      valueLossCoef: a.value_loss_coef,
      ...(a.rl_algorithm === "iac" && { valueClipRange: a.value_clip_range }),
    });
  } finally {
    ac.dispose();
  }
}

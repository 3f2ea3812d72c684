/**
 * The actor-critic algorithms of MARLHF, each in its own file, and what runs them:
 * - MAAC, one centralized critic: maac.ts;
 * - IAC with a `Critic` per agent (`use_separate_critic=true`): iac.ts;
 * - IAC with a value head on each actor's backbone (`use_separate_critic=false`): iac-shared-head.ts.
 * All are CoMLRL's single-turn, on-policy, one-step A2C (no ratio, no policy clipping, no
 * entropy), with the policy loss of policy-loss.ts and the value loss of value-loss.ts. This file
 * checks a batch, picks the algorithm from the setup, and loops over epochs of rollouts.
 */
import { mean } from "@pbrl/core-tensor";
import type { TrainableAgent } from "@pbrl/preference-data";
import { checkRollouts, type ActorCriticBatch, type ActorCriticOptions } from "./actor-critic-batch.js";
import { shapedReturns } from "./actor-critic-advantages.js";
import { Critic, checkCriticType, type ActorValueHead, type CriticType } from "./critic.js";
import { runCollections, type BatchReport, type CollectionSettings } from "./epochs.js";
import { iacUpdate, iacValues } from "./iac.js";
import { sharedHeadUpdate, sharedHeadValues } from "./iac-shared-head.js";
import { maacUpdate, maacValues } from "./maac.js";
import type { Rollout } from "./rollouts.js";

export type ActorCriticSetup =
  | { algorithm: "maac"; critic: Critic }
  | { algorithm: "iac"; layout: "separate"; critics: readonly Critic[] }
  | { algorithm: "iac"; layout: "shared"; valueHeads: readonly ActorValueHead[] };

export class ActorCriticSetupError extends Error {
  override name = "ActorCriticSetupError";
}

function checkSetup(agents: readonly TrainableAgent[], setup: ActorCriticSetup): void {
  if (setup.algorithm === "maac") {
    if (!(setup.critic instanceof Critic)) throw new ActorCriticSetupError("maac needs one centralized Critic (`critic`)");
    return;
  }
  if (setup.layout === "separate") {
    if (setup.critics.length !== agents.length)
      throw new ActorCriticSetupError(
        `iac with use_separate_critic=true needs one critic per agent: got ${setup.critics.length} critic(s) for ${agents.length} agent(s)`,
      );
  } else {
    if (setup.valueHeads.length !== agents.length)
      throw new ActorCriticSetupError(
        `iac with use_separate_critic=false needs one value head per agent: got ${setup.valueHeads.length} for ${agents.length} agent(s)`,
      );
    setup.valueHeads.forEach((h, i) => {
      if (h.head.options.hiddenSize !== agents[i]!.model.config.hiddenSize)
        throw new ActorCriticSetupError(
          `value head ${i} reads hidden size ${h.head.options.hiddenSize}, but agent ${i}'s backbone has ${agents[i]!.model.config.hiddenSize}`,
        );
    });
  }
}

/**
 * V_old of every sample, `values[agent][rollout][g]`, without gradients: what the advantages are
 * measured against and what value clipping is relative to. Call it right after sampling.
 */
export function actorCriticValues(
  agents: readonly TrainableAgent[],
  setup: ActorCriticSetup,
  rollouts: readonly Rollout[],
  criticType: CriticType,
  batchSize = 16,
): number[][][] {
  checkSetup(agents, setup);
  const type = checkCriticType(criticType);
  if (rollouts.length === 0) return agents.map(() => []);
  if (setup.algorithm === "maac") return maacValues(agents.length, setup.critic, rollouts, type, batchSize);
  if (setup.layout === "separate") return iacValues(setup.critics, rollouts, type, batchSize);
  return sharedHeadValues(agents, setup.valueHeads, rollouts, type, batchSize);
}

/**
 * One actor-critic update from a batch of rollouts: every agent's actor step (and, in IAC, its
 * critic step), then, in MAAC, one step of the shared critic. Returns metrics computed in the
 * forward passes that produced the gradients (pre-step):
 * `agent_i/{loss, advantage_mean, logprob_mean, value_mean, penalty_mean?}`, for IAC also
 * `agent_i/{value_loss, target_mean, clip_fraction}`; joint `critic/{value_loss, value_mean,
 * target_mean, clip_fraction}` (MAAC: its critic; IAC: the mean over agents), `rl/advantage_std`,
 * `turn_1/reward_mean`, `turn_1/expected_return`, and CoMLRL's names for the same numbers
 * (`turn_1/policy_loss`, `turn_1/value_loss`, `turn_1/value_pred_mean`, `turn_1/value_target_mean`).
 */
export function actorCriticUpdate(
  agents: readonly TrainableAgent[],
  setup: ActorCriticSetup,
  rollouts: readonly Rollout[],
  options: ActorCriticOptions,
): Record<string, number> {
  const { where } = options;
  checkSetup(agents, setup);
  const type = checkCriticType(options.criticType);
  checkRollouts(agents.length, rollouts, options.penalties, where);
  if (!(options.valueLossCoef >= 0) || !Number.isFinite(options.valueLossCoef))
    throw new RangeError(`value_loss_coef must be a finite number ≥ 0, got ${options.valueLossCoef}`);
  const chunk = options.maxRowsPerForward;
  if (chunk !== undefined && (!Number.isInteger(chunk) || chunk < 1)) throw new RangeError(`maxRowsPerForward must be an integer ≥ 1, got ${chunk}`);
  const old = options.oldValues ?? actorCriticValues(agents, setup, rollouts, type, chunk ?? 16);
  if (old.length !== agents.length) throw new RangeError(`oldValues: got ${old.length} agent(s), expected ${agents.length} (${where})`);
  old.forEach((perRollout, a) => {
    if (perRollout.length !== rollouts.length)
      throw new RangeError(`oldValues of agent ${a}: got ${perRollout.length} rollout(s), expected ${rollouts.length} (${where})`);
  });
  const shaped = agents.map((_, i) => shapedReturns(rollouts, i, options.penalties));
  const batch: ActorCriticBatch = { options, rollouts, type, shaped, old };
  if (setup.algorithm === "maac") return maacUpdate(agents, setup.critic, batch);
  if (setup.layout === "separate") return iacUpdate(agents, setup.critics, batch);
  return sharedHeadUpdate(agents, setup.valueHeads, batch);
}

export interface ActorCriticEpochsOptions extends CollectionSettings {
  agents: readonly TrainableAgent[];
  setup: ActorCriticSetup;
  criticType: CriticType;
  /** num_generations (1 is allowed for maac/iac). */
  numGenerations: number;
  normalize: boolean;
  valueLossCoef: number;
  valueClipRange?: number | null | undefined;
  /** Items per update (mini-batch). */
  trainBatchSize: number;
  /**
   * Items sampled per collection (CoMLRL's rollout_buffer_size); default `trainBatchSize` (one
   * update per collection). When larger, V_old is computed once at collection and the buffer is
   * consumed in mini-batches of `trainBatchSize`, so later mini-batches clip against stale values.
   */
  rolloutBufferSize?: number | undefined;
  maxRowsPerForward?: number | undefined;
  label?: string;
  /** Once per collection, with the mean of its updates' metrics (plus `rl/updates`). */
  onBatch?: (report: BatchReport) => void | Promise<void>;
}

/**
 * On-policy actor-critic training over a fixed item set, the counterpart of `runRlEpochs`: per
 * epoch a seeded shuffle, then per collection of `rolloutBufferSize` items fresh rollouts,
 * optional shaping, V_old of every sample, and one `actorCriticUpdate` per mini-batch.
 */
export async function runActorCriticEpochs(o: ActorCriticEpochsOptions): Promise<void> {
  if (!Number.isInteger(o.numTrainEpochs) || o.numTrainEpochs < 0) throw new RangeError(`num_train_epochs must be an integer ≥ 0, got ${o.numTrainEpochs}`);
  if (!Number.isInteger(o.trainBatchSize) || o.trainBatchSize < 1) throw new RangeError(`train_batch_size must be an integer ≥ 1, got ${o.trainBatchSize}`);
  const buffer = o.rolloutBufferSize ?? o.trainBatchSize;
  if (!Number.isInteger(buffer) || buffer < 1) throw new RangeError(`rollout_buffer_size must be an integer ≥ 1, got ${buffer}`);
  if (o.formatters.length !== o.agents.length) throw new RangeError(`${o.formatters.length} formatter(s) for ${o.agents.length} agent(s)`);
  checkSetup(o.agents, o.setup);
  checkCriticType(o.criticType);
  const label = o.label ?? "";
  await runCollections({ ...o, itemsPerCollection: buffer }, (rollouts, shaped, p) => {
    const old = actorCriticValues(o.agents, o.setup, rollouts, o.criticType, o.maxRowsPerForward ?? 16);
    const all: Record<string, number>[] = [];
    for (let s = 0, u = 1; s < rollouts.length; s += o.trainBatchSize, u++) {
      const part = rollouts.slice(s, s + o.trainBatchSize);
      all.push(
        actorCriticUpdate(o.agents, o.setup, part, {
          criticType: o.criticType,
          normalize: o.normalize,
          valueLossCoef: o.valueLossCoef,
          valueClipRange: o.valueClipRange,
          penalties: shaped?.penalties.map((perAgent) => perAgent.slice(s, s + o.trainBatchSize)),
          oldValues: old.map((perAgent) => perAgent.slice(s, s + o.trainBatchSize)),
          where: `${label}epoch ${p.epoch}, batch ${p.batch}${buffer > o.trainBatchSize ? `, update ${u}` : ""}`,
          maxRowsPerForward: o.maxRowsPerForward,
        }),
      );
    }
    const metrics: Record<string, number> = {};
    for (const k of Object.keys(all[0] ?? {})) metrics[k] = mean(all.map((m) => m[k] ?? 0));
    metrics["rl/updates"] = all.length;
    return metrics;
  });
}

import type { RngStream } from "@pbrl/core-tensor";
import type { CandidateSampler, Formatter, RewardProcessor, TaskItem } from "@pbrl/preference-data";
import type { AdvantageMode } from "./advantages.js";
import { collectRollouts, type JointReward, type Rollout } from "./rollouts.js";
import type { TrainableAgent } from "@pbrl/preference-data";
import { localPolicyGradientAgents, type PolicyGradientAgents, type PolicyStepResult } from "./policy-step.js";
import { agentAdvantages, checkRollouts, policyGradientMetrics, policyRows, rowOwners, type Penalties, type PolicyGradientMetrics } from "./update.js";

/** What a return-shaping hook (e.g. the frozen-reference KL) gives back for a batch. */
export interface ReturnShaping {
  /** `penalties[agent][rollout][g]`, subtracted from the joint returns before the advantage. */
  penalties: Penalties;
  /** Extra metrics merged into the batch's (e.g. `turn_1/reference_kl_mean`). */
  metrics?: Record<string, number>;
}

/** Where the loop is: 1-based epoch and batch, as errors and progress labels count them. */
export interface BatchPosition {
  epoch: number;
  batch: number;
  batchesPerEpoch: number;
  /** 0-based position within the epoch of the batch's first item, and how many items it collects. */
  firstItem: number;
  items: number;
}

export interface BatchReport extends BatchPosition {
  metrics: PolicyGradientMetrics;
  rollouts: readonly Rollout[];
  /** Joint reward evaluations of this batch (items × num_generations): CoMLRL's env_step increment. */
  jointEvaluations: number;
}

/** What every on-policy runner samples from and reports to: the collection loop's inputs. */
export interface CollectionSettings {
  items: readonly TaskItem[];
  formatters: readonly Formatter[];
  /** Samples the agents' responses (a PolicySampler over the same agents). */
  sampler: CandidateSampler;
  numGenerations: number;
  /** The training reward: the frozen reward model in MARLHF. */
  reward: JointReward;
  rewardProcessor?: RewardProcessor | undefined;
  rewardConcurrency?: number | undefined;
  numTrainEpochs: number;
  /** Shuffles the items at the start of every epoch. */
  shuffleRng: RngStream;
  /** Per-batch return shaping (the reference-KL hook); called after sampling, before the update. */
  shaping?: (rollouts: readonly Rollout[], position: BatchPosition) => ReturnShaping | Promise<ReturnShaping>;
  /**
   * Runs before each batch's sampling (e.g. evaluation on the trainer's schedule: the policies do
   * not change until the batch's update, so this is what they are at each of its items).
   */
  beforeBatch?: (position: BatchPosition) => void | Promise<void>;
  /** Runs after each update with its metrics (logging, progress, counters). */
  onBatch?: (report: BatchReport) => void | Promise<void>;
}

export interface RlEpochsOptions extends CollectionSettings {
  /** The agents being trained: here, or where a {@link PolicyGradientAgents} runs them (their sampler must sample those weights). */
  agents: readonly TrainableAgent[] | PolicyGradientAgents;
  mode: AdvantageMode;
  normalize: boolean;
  /** Items (each agent's G samples of one item) per optimizer step: the mini-batch. */
  trainBatchSize: number;
  /**
   * Items each agent's buffer holds before the agent is updated (CoMLRL's rollout_buffer_size);
   * default `trainBatchSize`. A full buffer is shuffled per agent and split into mini-batches of
   * `trainBatchSize`, one optimizer step each; what is left at the end of an epoch is drained.
   */
  rolloutBufferSize?: number | undefined;
  maxRowsPerForward?: number | undefined;
  /** Prefix of error locations, e.g. "round 3, ". */
  label?: string;
}

/** The collection loop both on-policy runners share (REINFORCE family and actor-critic). */
export interface CollectionLoopOptions extends CollectionSettings {
  /** Items sampled per collection. */
  itemsPerCollection: number;
}

/**
 * For each of num_train_epochs, a seeded shuffle of the items (CoMLRL never shuffles), then per
 * collection of `itemsPerCollection` items: fresh rollouts, optional return shaping, and
 * `learn`, whose metrics (merged with the shaping's) go to `onBatch`.
 */
export async function runCollections(
  o: CollectionLoopOptions,
  learn: (rollouts: readonly Rollout[], shaped: ReturnShaping | undefined, position: BatchPosition) => PolicyGradientMetrics | Promise<PolicyGradientMetrics>,
): Promise<void> {
  const batchesPerEpoch = Math.ceil(o.items.length / o.itemsPerCollection);
  for (let epoch = 1; epoch <= o.numTrainEpochs; epoch++) {
    const order = o.shuffleRng.permutation(o.items.length);
    for (let b = 0; b < batchesPerEpoch; b++) {
      const indices = order.slice(b * o.itemsPerCollection, (b + 1) * o.itemsPerCollection);
      const position: BatchPosition = { epoch, batch: b + 1, batchesPerEpoch, firstItem: b * o.itemsPerCollection, items: indices.length };
      await o.beforeBatch?.(position);
      const rollouts = await collectRollouts({
        items: indices.map((k) => o.items[k]!),
        itemIndices: indices,
        formatters: o.formatters,
        sampler: o.sampler,
        numGenerations: o.numGenerations,
        reward: o.reward,
        rewardProcessor: o.rewardProcessor,
        concurrency: o.rewardConcurrency ?? 1,
      });
      const shaped = await o.shaping?.(rollouts, position);
      const metrics = await learn(rollouts, shaped, position);
      await o.onBatch?.({ ...position, metrics: { ...metrics, ...shaped?.metrics }, rollouts, jointEvaluations: rollouts.length * o.numGenerations });
    }
  }
}

/**
 * On-policy REINFORCE-family training over a fixed item set, CoMLRL's MAGRPO loop: for each of
 * num_train_epochs a seeded shuffle of the items (CoMLRL never shuffles), then per full buffer
 * of `rolloutBufferSize` items (and the rest at the end of the epoch) fresh rollouts from the
 * current policies, optional return shaping, and each agent's update: its samples shuffled (when
 * they make more than one mini-batch) and split into mini-batches of `trainBatchSize` items, one
 * optimizer step each. Every agent's buffer fills with the same items, so all are updated
 * together; their steps depend only on their own samples, so they may run side by side.
 * Evaluation, logging and progress stay with the caller through the callbacks; `onBatch` gets
 * one report per buffer, with the mean of its steps' metrics and `rl/updates` (steps per agent).
 */
export async function runRlEpochs(o: RlEpochsOptions): Promise<void> {
  if (!Number.isInteger(o.numTrainEpochs) || o.numTrainEpochs < 0) throw new RangeError(`num_train_epochs must be an integer ≥ 0, got ${o.numTrainEpochs}`);
  if (!Number.isInteger(o.trainBatchSize) || o.trainBatchSize < 1) throw new RangeError(`train_batch_size must be an integer ≥ 1, got ${o.trainBatchSize}`);
  const buffer = o.rolloutBufferSize ?? o.trainBatchSize;
  if (!Number.isInteger(buffer) || buffer < 1) throw new RangeError(`rollout_buffer_size must be an integer ≥ 1, got ${buffer}`);
  const agents = isAgentList(o.agents) ? localPolicyGradientAgents(o.agents) : o.agents;
  if (o.formatters.length !== agents.count) throw new RangeError(`${o.formatters.length} formatter(s) for ${agents.count} agent(s)`);
  const label = o.label ?? "";
  await runCollections({ ...o, itemsPerCollection: buffer }, async (rollouts, shaped, p) => {
    const where = `${label}epoch ${p.epoch}, batch ${p.batch}`;
    checkRollouts(agents.count, rollouts, shaped?.penalties, where);
    const indices = Array.from({ length: agents.count }, (_, i) => i);
    const advantages = indices.map((i) => agentAdvantages(rollouts, i, o.mode, o.normalize, shaped?.penalties));
    // The shuffles are drawn here, agent by agent, so where the agents step cannot change them.
    const minibatches = indices.map(() => miniBatches(rollouts.length, o.trainBatchSize, o.shuffleRng));
    const steps = await Promise.allSettled(
      indices.map(async (i) => {
        const done: PolicyStepResult[] = [];
        for (const [u, part] of minibatches[i]!.entries()) {
          const chosen = part.map((k) => rollouts[k]!);
          const stepWhere = minibatches[i]!.length > 1 ? `${where}, update ${u + 1}` : where;
          done.push(
            await agents.policyStep(i, {
              rows: policyRows(chosen, i),
              advantages: part.flatMap((k) => advantages[i]![k]!),
              owners: rowOwners(chosen),
              where: stepWhere,
              maxRowsPerForward: o.maxRowsPerForward,
            }),
          );
        }
        return done;
      }),
    );
    // Every agent finishes its steps even when one fails (no worker is left mid-step); the first error wins.
    const failed = steps.find((r) => r.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    const results = steps.map((r) => (r as PromiseFulfilledResult<PolicyStepResult[]>).value);
    return {
      ...policyGradientMetrics(
        rollouts,
        advantages.map((a) => a.flat()),
        results,
        shaped?.penalties,
      ),
      "rl/updates": minibatches[0]!.length,
    };
  });
}

/**
 * A buffer's rollouts in mini-batches of `size`: in order when they fit in one (no draw: the
 * mean over one batch does not depend on its order), else shuffled first, as CoMLRL shuffles a
 * buffer before splitting it.
 */
export function miniBatches(count: number, size: number, rng: RngStream): number[][] {
  const order = count <= size ? Array.from({ length: count }, (_, k) => k) : rng.permutation(count);
  const out: number[][] = [];
  for (let s = 0; s < count; s += size) out.push(order.slice(s, s + size));
  return out;
}

function isAgentList(agents: RlEpochsOptions["agents"]): agents is readonly TrainableAgent[] {
  return Array.isArray(agents);
}

import type { RngStream } from "@pbrl/core-tensor";
import type { CandidateSampler, Formatter, RewardProcessor, TaskItem } from "@pbrl/preference-data";
import type { AdvantageMode } from "./advantages.js";
import { collectRollouts, type JointReward, type Rollout } from "./rollouts.js";
import { policyGradientUpdate, type Penalties, type PolicyGradientMetrics, type TrainableAgent } from "./update.js";

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
  /** Runs before each batch's sampling (e.g. evaluation on the trainer's schedule). */
  beforeBatch?: (position: BatchPosition) => void | Promise<void>;
  /** Runs after each update with its metrics (logging, progress, counters). */
  onBatch?: (report: BatchReport) => void | Promise<void>;
}

export interface RlEpochsOptions extends CollectionSettings {
  agents: readonly TrainableAgent[];
  mode: AdvantageMode;
  normalize: boolean;
  /** Items per update. */
  trainBatchSize: number;
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
  learn: (rollouts: readonly Rollout[], shaped: ReturnShaping | undefined, position: BatchPosition) => PolicyGradientMetrics,
): Promise<void> {
  const batchesPerEpoch = Math.ceil(o.items.length / o.itemsPerCollection);
  for (let epoch = 1; epoch <= o.numTrainEpochs; epoch++) {
    const order = o.shuffleRng.permutation(o.items.length);
    for (let b = 0; b < batchesPerEpoch; b++) {
      const position: BatchPosition = { epoch, batch: b + 1, batchesPerEpoch };
      await o.beforeBatch?.(position);
      const indices = order.slice(b * o.itemsPerCollection, (b + 1) * o.itemsPerCollection);
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
      const metrics = learn(rollouts, shaped, position);
      await o.onBatch?.({ ...position, metrics: { ...metrics, ...shaped?.metrics }, rollouts, jointEvaluations: rollouts.length * o.numGenerations });
    }
  }
}

/**
 * On-policy REINFORCE-family training over a fixed item set: for each of num_train_epochs, a
 * seeded shuffle of the items, then per batch of train_batch_size items fresh rollouts from the
 * current policies, optional return shaping, one update of every agent. Evaluation, logging and
 * progress stay with the caller through the callbacks.
 */
export async function runRlEpochs(o: RlEpochsOptions): Promise<void> {
  if (!Number.isInteger(o.numTrainEpochs) || o.numTrainEpochs < 0) throw new RangeError(`num_train_epochs must be an integer ≥ 0, got ${o.numTrainEpochs}`);
  if (!Number.isInteger(o.trainBatchSize) || o.trainBatchSize < 1) throw new RangeError(`train_batch_size must be an integer ≥ 1, got ${o.trainBatchSize}`);
  if (o.formatters.length !== o.agents.length) throw new RangeError(`${o.formatters.length} formatter(s) for ${o.agents.length} agent(s)`);
  const label = o.label ?? "";
  await runCollections({ ...o, itemsPerCollection: o.trainBatchSize }, (rollouts, shaped, p) =>
    policyGradientUpdate(o.agents, rollouts, {
      mode: o.mode,
      normalize: o.normalize,
      penalties: shaped?.penalties,
      where: `${label}epoch ${p.epoch}, batch ${p.batch}`,
      maxRowsPerForward: o.maxRowsPerForward,
    }),
  );
}

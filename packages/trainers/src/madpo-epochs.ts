import { mean, type RngStream } from "@pbrl/core-tensor";
import { madpoUpdate, type MadpoAgents } from "@pbrl/dpo";
import type { CollectedPair } from "@pbrl/preference-data";
import type { MADPOConfig } from "./config/madpo-config.js";
import type { MetricsLog } from "./metrics-log.js";
import { ProgressBar, type ProgressMode } from "./progress.js";
import { passesLoggingGate, type TrainingCounters } from "./training-counters.js";

/** The settings the epoch loop reads (shared by the MADPO configs). */
export type EpochSettings = Pick<
  MADPOConfig,
  | "num_train_epochs"
  | "train_batch_size"
  | "gradient_accumulation_steps"
  | "eval_interval"
  | "dpo_beta"
  | "madpo_score_last_token"
  | "use_environment_step"
  | "environment_steps_per_pair"
  | "logging_steps"
>;

export interface EpochsContext {
  args: EpochSettings;
  /** The agents, in this thread or in worker threads. */
  agents: MadpoAgents;
  counters: TrainingCounters;
  shuffleRng: RngStream;
  metrics: MetricsLog;
  /** Runs before an update whenever updates % eval_interval == 0. */
  evaluate: () => Promise<void>;
  progress: ProgressMode;
  /** Prefix for progress labels and error locations, e.g. "round 3, ". */
  label: string;
  /** Extra fields on every train metrics line (e.g. the round). */
  extra?: Record<string, number>;
}

/**
 * MADPO over a fixed set of pairs for num_train_epochs: a seeded shuffle per epoch, batches of
 * train_batch_size × gradient_accumulation_steps pairs, one update per batch (its gradients
 * summed over micro-batches of train_batch_size), evaluation on the eval_interval schedule
 * (counted in updates across the whole run), train metrics through the logging_steps gate.
 */
export async function runMadpoEpochs(pairs: readonly CollectedPair[], ctx: EpochsContext): Promise<void> {
  const a = ctx.args;
  const c = ctx.counters;
  const batchSize = a.train_batch_size * a.gradient_accumulation_steps;
  const batches = Math.ceil(pairs.length / batchSize);
  for (let epoch = 0; epoch < a.num_train_epochs; epoch++) {
    const order = ctx.shuffleRng.permutation(pairs.length);
    const bar = new ProgressBar(`${ctx.label}MADPO epoch ${epoch + 1}/${a.num_train_epochs}`, batches, ctx.progress);
    for (let b = 0; b < batches; b++) {
      if (a.eval_interval > 0 && c.updates % a.eval_interval === 0) await ctx.evaluate();
      const batch = order.slice(b * batchSize, (b + 1) * batchSize).map((k) => pairs[k]!);
      const m = await madpoUpdate(
        ctx.agents,
        batch.map((p) => p.tokens),
        {
          beta: a.dpo_beta,
          scoreLastToken: a.madpo_score_last_token,
          microBatch: a.train_batch_size,
          where: `${ctx.label}epoch ${epoch + 1}, batch ${b + 1}`,
        },
      );
      c.updates += 1;
      if (a.use_environment_step) c.envStep += a.environment_steps_per_pair * batch.length;
      const step = a.use_environment_step ? c.envStep : c.updates;
      const rewardMean = mean(batch.map((p) => p.record.candidate_reward_mean));
      if (passesLoggingGate(c, step, a.logging_steps)) {
        ctx.metrics.write({
          kind: "train",
          step,
          ...ctx.extra,
          epoch: epoch + 1,
          update: c.updates,
          ...m,
          "turn_1/reward_mean": rewardMean,
          "turn_1/expected_return": rewardMean,
        });
      }
      bar.update(b + 1, `loss ${m.loss.toFixed(4)} acc ${m["joint/accuracy"].toFixed(2)}`);
    }
    bar.finish();
  }
}

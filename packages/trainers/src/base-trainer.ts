import * as path from "node:path";
import { guardHeap, mean, RngStreams, writeFileAtomic } from "@pbrl/core-tensor";
import { collectPreferencePairs, writePairsFile } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";
import type { PreferenceConfig } from "./config/madpo-config.js";
import type { EvalResult } from "./evaluation.js";
import type { LearnSession } from "./learner.js";
import { MetricsLog } from "./metrics-log.js";
import { ProgressBar } from "./progress.js";
import { RunCallbacks } from "./callbacks.js";
import { runConfigRecord } from "./run-config-record.js";
import { attachDropoutStreams } from "./lora-settings.js";
import { openRunDir, planRunDir, type RunDirOptions } from "./run-dir.js";
import { runInputs } from "./run-inputs.js";
import { samplingSettings } from "./sampling-settings.js";
import { STREAMS } from "./stream-names.js";
import { openTensorBoard } from "./tensorboard-log.js";
import { TrainerCore } from "./trainer-core.js";
import { freshCounters, type TrainingCounters } from "./training-counters.js";

export interface TrainResult {
  numPairs: number;
  updates: number;
  envStep: number;
  /** False when no item produced a non-tied pair, or a callback stopped the run after collection: the policies were left untouched. */
  trained: boolean;
  /** True when a callback (control.shouldTrainingStop) stopped the run after collection. */
  stopped: boolean;
  evalBefore: EvalResult | undefined;
  evalAfter: EvalResult | undefined;
  outputDir: string;
}

/**
 * A base trainer: collect preference pairs once from the initial policies, hand them to the
 * learning step, save the trained agents. Metrics go to `<output_dir>/metrics.jsonl`, the
 * collected pairs to `<output_dir>/preference_pairs.json`, what the learner keeps (MARLHF: its
 * reward model) beside them, and the agents to `<output_dir>/agents/agent_<i>`.
 */
export abstract class BaseTrainer<C extends PreferenceConfig> extends TrainerCore<C> {
  /**
   * Runs the trainer. A run the backend's tensor memory cannot hold stops before anything is
   * written, with a MemoryBudgetError (run-memory.ts); a kernel that runs out of heap anyway gives one too.
   */
  async train(): Promise<TrainResult> {
    return guardHeap("training", () => this.trainRun());
  }

  private async trainRun(): Promise<TrainResult> {
    const a = this.args;
    const dirOptions: RunDirOptions = {
      outputDir: a.output_dir,
      resumeLatest: false,
      overwrite: a.overwrite_output_dir,
      trainer: this.trainerName,
      inputs: runInputs(a, this.options),
      log: this.log,
    };
    const { agents, plan } = await this.checkBeforeRun(() => planRunDir(dirOptions));
    const release = openRunDir(dirOptions, plan);
    try {
      const record = runConfigRecord(this.trainerName, a);
      await writeFileAtomic(path.join(a.output_dir, "config.json"), JSON.stringify(record, null, 2) + "\n");
      const tensorboard = a.report_to === "tensorboard" ? openTensorBoard(a.output_dir) : undefined;
      const counters = freshCounters();
      const callbacks = new RunCallbacks(this.options.callbacks ?? [], { trainer: this.trainerName, outputDir: a.output_dir, numRounds: 1 }, counters);
      try {
        const metrics = new MetricsLog(a.output_dir, { listeners: [this.options.onLog, tensorboard?.listener, callbacks.listener] });
        await callbacks.emit("onTrainBegin");
        const result = await this.collectAndLearn(agents, record, metrics, counters, callbacks);
        await callbacks.emit("onTrainEnd");
        return result;
      } finally {
        tensorboard?.close();
      }
    } finally {
      release();
    }
  }

  private async collectAndLearn(
    agents: ResolvedAgent[],
    record: Record<string, unknown>,
    metrics: MetricsLog,
    counters: TrainingCounters,
    callbacks: RunCallbacks,
  ): Promise<TrainResult> {
    const a = this.args;
    const streams = new RngStreams(a.seed);
    attachDropoutStreams(agents, streams);
    const progress = this.progressMode();

    // 1. Preference data, once, from the initial policies, labelled by the task reward.
    const items = this.datasets.train;
    const collectBar = new ProgressBar("MADPO preference rollout", items.length, progress);
    const collected = await collectPreferencePairs({
      items,
      formatters: this.task.formatters,
      sampler: this.execution.sampler(this.task.policies(agents), samplingSettings(a), streams.get(STREAMS.policy)),
      rewardFunc: this.taskReward(),
      isValid: this.task.isValid,
      rewardProcessor: this.options.rewardProcessor,
      numCandidates: a.preference_num_candidates,
      pairSelection: a.pair_selection,
      pairsPerSample: a.preference_pairs_per_sample,
      selectionRng: streams.get(STREAMS.pairs),
      rewardConcurrency: a.reward_concurrency,
      rewardTimeoutS: a.reward_timeout_s,
      onWarning: (m) => this.log(`pbrl: ${m}`),
      itemsPerBatch: Math.max(1, Math.floor(a.generation_batch_size / a.preference_num_candidates)),
      onProgress: (done) => collectBar.update(done),
    });
    collectBar.finish();
    const pairs = collected.pairs;
    await writePairsFile(
      path.join(a.output_dir, "preference_pairs.json"),
      pairs.map((p) => p.record),
    );
    metrics.write({
      kind: "collect",
      step: 0,
      "preference/num_pairs": pairs.length,
      "preference/items_with_pairs": collected.itemsWithPairs,
      "preference/items": items.length,
      "preference/invalid_candidates": collected.invalidCandidates,
      "preference/candidate_reward_mean": mean(collected.candidateRewards.flat()),
    });
    this.log(`pbrl: collected ${pairs.length} preference pairs from ${collected.itemsWithPairs} of ${items.length} items`);
    const result: TrainResult = {
      numPairs: pairs.length,
      updates: 0,
      envStep: 0,
      trained: false,
      stopped: false,
      evalBefore: undefined,
      evalAfter: undefined,
      outputDir: a.output_dir,
    };
    if (pairs.length === 0) {
      this.log(
        "pbrl: no item produced a non-tied preference pair; the policies were not updated (more candidates, a higher temperature or a finer-grained reward may help)",
      );
      return result;
    }
    if (callbacks.control.shouldTrainingStop) {
      this.log(`pbrl: stopped after collection (a callback set control.shouldTrainingStop); the pairs are in ${a.output_dir}, the policies were not updated`);
      return { ...result, stopped: true };
    }

    // 2. Learning on the fixed pairs; what the learner keeps is saved beside them.
    const evalRng = streams.get(STREAMS.eval);
    const evaluate = async (step?: number) => {
      const r = await this.evaluateAndRecord(metrics, counters, evalRng, step, callbacks);
      result.evalBefore ??= r;
    };
    const optimizers = this.startOptimizers(agents);
    const session: LearnSession = { agents, optimizers, counters, streams, metrics, evaluate, progress, log: this.log };
    await this.learn(pairs, { ...session, label: "", extra: {}, newPairs: pairs, scorer: "task", initialPoliciesDir: undefined });
    await this.learner.saveState(a.output_dir);
    Object.assign(result, { updates: counters.updates, envStep: counters.envStep, trained: true });

    // 3. The final evaluation and the trained agents, as Hugging Face checkpoints.
    result.evalAfter = await this.finishRun({ metrics, counters, evalRng, record, done: `${result.updates} updates`, callbacks });
    return result;
  }
}

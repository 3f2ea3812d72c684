import * as path from "node:path";
import { guardHeap, RngStreams, writeFileAtomic } from "@pbrl/core-tensor";
import type { EvalPoint } from "@pbrl/human-labels";
import {
  collectComparisons,
  collectOpenComparisons,
  pairTokensFromRecord,
  type BothSidesOptions,
  type Comparator,
  type CompareResult,
  type PreferenceScorer,
  type ReplayBuffer,
} from "@pbrl/preference-data";
import { OnDiskReplayBuffer } from "@pbrl/replay";
import type { ResolvedAgent } from "./agents.js";
import { buildComparator } from "./comparator-factory.js";
import { ConfigError } from "./config/define-config.js";
import type { IterativeConfig } from "./config/madpo-iter-config.js";
import type { EvalResult } from "./evaluation.js";
import { HUMAN_LABELS_DIR, HumanJudges, labelledByPeople, LabellingStoppedError, labelPageLines } from "./human-judges.js";
import type { Learner, LearnSession, PreferenceScoring, RoundContext } from "./learner.js";
import { MetricsLog } from "./metrics-log.js";
import { ProgressBar } from "./progress.js";
import { RunCallbacks } from "./callbacks.js";
import { customPluginFields, pluginLabel, type ComparatorFactory, type PluginRecord } from "./custom-plugins.js";
import { checkpointConfig, type ConfigChange } from "./resume-changes.js";
import { declaredRewardRange } from "./reward-distribution.js";
import { recordRound, roundSummary, type RoundSummary } from "./round-record.js";
import { checkpointToResume, restoreFromCheckpoint } from "./round-resume.js";
import { recordResumeChanges, runConfigRecord } from "./run-config-record.js";
import { attachDropoutStreams } from "./lora-settings.js";
import { openRunDir, planRunDir, type RunDirOptions } from "./run-dir.js";
import { runInputs } from "./run-inputs.js";
import { samplingSettings } from "./sampling-settings.js";
import { StopSignals } from "./stop-signals.js";
import { STREAMS } from "./stream-names.js";
import { openTensorBoard, type TensorBoardLog } from "./tensorboard-log.js";
import { TrainerCore, type LearnerParts, type TrainerNames, type TrainerOptions } from "./trainer-core.js";
import { policiesAtStartOf, saveInitialPolicies, saveTrainingCheckpoint, type LoadedCheckpoint, type TrainingState } from "./training-checkpoint.js";
import { freshCounters } from "./training-counters.js";

export type { RoundSummary } from "./round-record.js";

/** The options every iterative trainer takes besides its config. */
export interface IterativeTrainerOptions extends TrainerOptions {
  /**
   * Replaces the comparator the config describes: any implementation of the interface, or a
   * factory called with the run's live agents once they are loaded. config.json and the log name
   * it (its `name` and `description`) with comparator_policy "custom".
   */
  comparator?: Comparator | ComparatorFactory;
  /** Replaces the on-disk replay buffer the config describes; config.json and the log name it, with preference_replay_mode "custom". */
  replayBuffer?: ReplayBuffer;
  /** [min, max] of raw rewards for the log_reward_distribution histograms (default: reward_func.reward_range). */
  rewardRange?: [number, number];
  /** Called as a round's collection starts (the comparator holds that round's weights); `callbacks` (onRoundBegin) can also stop the run. */
  onRoundStart?: (round: number) => void;
  /**
   * preference_labeler="human": receives the labelling page's link, token included, once it
   * listens, and when human_label_host is not loopback the warning that the token is the only
   * lock (default: both on stderr, also when not verbose: people need them).
   */
  onLabelPage?: (url: string, warning?: string) => void;
  /** Called once a round is complete, its checkpoint written (also for a round without pairs); `callbacks` (onRoundEnd) can also stop the run. */
  onRoundEnd?: (summary: RoundSummary) => void | Promise<void>;
}

export interface IterTrainResult {
  rounds: RoundSummary[];
  updates: number;
  envStep: number;
  evalBefore: EvalResult | undefined;
  evalAfter: EvalResult | undefined;
  outputDir: string;
  /** The round a resumed run continued after, if it resumed. */
  resumedAfterRound: number | undefined;
  /** True when a signal or a callback (control.shouldTrainingStop) stopped the run after a completed round. */
  stopped: boolean;
}

/** What a run works with once output_dir is open. */
interface RoundRun {
  agents: ResolvedAgent[];
  streams: RngStreams;
  comparator: Comparator;
  ckpt: LoadedCheckpoint | undefined;
  changes: ConfigChange[];
  record: Record<string, unknown>;
  ckptRoot: string;
  /** preference_labeler="human": the labelling page, serving from before output_dir is opened. */
  judges: HumanJudges | undefined;
}

/**
 * The iterative trainers' round loop (the seed's MADPOIterTrainer.train), with the learning step
 * a component: for num_iterations rounds, the current agents and a comparator answer every task
 * item, index-aligned comparisons with a clear winner become pairs, the replay buffer chooses the
 * training pairs from this round and earlier ones, and the learner trains on them. After every
 * round a checkpoint holds everything needed to continue exactly where the run stopped.
 */
export abstract class IterativeTrainer<C extends IterativeConfig> extends TrainerCore<C> {
  declare protected readonly options: IterativeTrainerOptions;
  private comparator: Comparator | undefined;
  /** log_reward_distribution's bins: the declared raw reward range, checked at construction as CoMLRL does. */
  private readonly distributionRange: [number, number] | undefined;
  /** The eval rewards so far, by round, for the labelling page. */
  private readonly evalCurve: EvalPoint[] = [];
  private signals: StopSignals | undefined;

  protected constructor(options: IterativeTrainerOptions, names: TrainerNames, args: C, learner: (parts: LearnerParts) => Learner) {
    super(options, names, args, learner);
    if (args.log_reward_distribution) {
      const range = declaredRewardRange(options.rewardRange ?? (options.rewardFunc as { reward_range?: unknown } | undefined)?.reward_range);
      if (typeof range === "string") throw new ConfigError(this.configName, [`log_reward_distribution: ${range}`]);
      this.distributionRange = range;
    }
  }

  /**
   * Runs the rounds. A run the backend's tensor memory cannot hold stops before anything is
   * written, with a MemoryBudgetError (run-memory.ts); a kernel that runs out of heap anyway gives one too.
   */
  async train(): Promise<IterTrainResult> {
    return guardHeap("training", () => this.trainRounds());
  }

  /** Everything is read and checked (the checkpoint a resume continues included) before output_dir is opened. */
  private async trainRounds(): Promise<IterTrainResult> {
    const a = this.args;
    const ckptRoot = a.policy_checkpoint_dir ?? path.join(a.output_dir, "checkpoints");
    const spec = a.resume_from_checkpoint;
    const dirOptions: RunDirOptions = {
      outputDir: a.output_dir,
      policyCheckpointDir: a.policy_checkpoint_dir,
      preferenceReplayDir: a.preference_replay_dir,
      rounds: a.num_iterations,
      inputs: runInputs(a, this.options),
      resumeLatest: spec === true,
      // A checkpoint path names the run to continue, wherever output_dir's own latest is.
      ...(typeof spec === "string" ? { resumeCheckpoint: spec } : {}),
      checkpointsDir: ckptRoot,
      overwrite: a.overwrite_output_dir,
      trainer: this.trainerName,
      log: this.log,
    };
    const { agents, plan } = await this.checkBeforeRun(() => planRunDir(dirOptions));
    const streams = new RngStreams(a.seed);
    attachDropoutStreams(agents, streams);
    this.comparator = this.runComparator(agents, streams, ckptRoot);
    const custom = customPluginFields({
      comparator: this.options.comparator === undefined ? undefined : this.comparator,
      replayBuffer: this.options.replayBuffer,
    });
    const record = runConfigRecord(this.trainerName, a, custom);
    const { ckpt, changes } = await checkpointToResume({
      resume: plan.resume,
      spec,
      ckptRoot,
      trainerName: this.trainerName,
      numAgents: agents.length,
      seed: a.seed,
      numRounds: a.num_iterations,
      record,
    });
    // The page listens before output_dir is opened: a port in use stops the run with nothing written.
    const judges =
      a.preference_labeler === "human"
        ? await HumanJudges.start({
            args: a,
            log: this.log,
            announce: this.options.onLabelPage ?? ((url, warning) => process.stderr.write(labelPageLines(url, warning))),
            progress: this.progressMode(),
            evalCurve: () => this.evalCurve,
            stopRequested: () => this.signals?.requested === true,
          })
        : undefined;
    try {
      const release = openRunDir(dirOptions, plan);
      const tensorboard = a.report_to === "tensorboard" ? openTensorBoard(a.output_dir, ckpt?.state.counters.envStep) : undefined;
      try {
        return await this.runRounds({ agents, streams, comparator: this.comparator, ckpt, changes, record, ckptRoot, judges }, tensorboard);
      } finally {
        tensorboard?.close();
        release();
      }
    } finally {
      await judges?.close();
    }
  }

  /** The options' comparator (or what their factory builds from the live agents), else the one the config describes. */
  private runComparator(agents: readonly ResolvedAgent[], streams: RngStreams, ckptRoot: string): Comparator {
    const a = this.args;
    const given = this.options.comparator;
    if (typeof given === "function")
      return given({ agents, tokenizers: agents.map((ag) => ag.tokenizer), generation: samplingSettings(a), rng: streams.get(STREAMS.comparator) });
    if (given !== undefined) return given;
    // One actor writing every role answers the joint prompt itself, so its comparator samples
    // that prompt directly rather than splitting and re-joining roles.
    const comparatorArgs = a.collaboration_mode === "centralized" ? { ...a, comparator_generation_mode: "decentralized" as const } : a;
    return buildComparator({
      args: comparatorArgs,
      agents,
      rng: streams.get(STREAMS.comparator),
      backoffRng: streams.get(STREAMS.apiBackoff),
      log: this.log,
      generation: samplingSettings(a),
      adapter: this.options.centralizedAdapter,
      weightsAt: (round) => policiesAtStartOf(ckptRoot, round),
    });
  }

  private async runRounds(run: RoundRun, tensorboard: TensorBoardLog | undefined): Promise<IterTrainResult> {
    const a = this.args;
    const { agents, streams, comparator, ckpt, ckptRoot } = run;
    const items = this.datasets.train;
    const optimizers = this.startOptimizers(agents);
    const counters = freshCounters();
    const replay =
      this.options.replayBuffer ??
      new OnDiskReplayBuffer({
        mode: a.preference_replay_mode,
        k: a.preference_replay_k,
        lambda: a.preference_replay_lambda,
        sampleSize: a.preference_replay_sample_size,
        dir: a.preference_replay_dir ?? path.join(a.output_dir, "preference_replay"),
        rng: streams.get(STREAMS.replay),
      });
    const callbacks = new RunCallbacks(
      this.options.callbacks ?? [],
      { trainer: this.trainerName, outputDir: a.output_dir, numRounds: a.num_iterations },
      counters,
    );
    const listeners = [this.options.onLog, tensorboard?.listener, callbacks.listener];

    // A resumed run continues after the checkpoint's round with everything as it was; a fresh one
    // (also when resume_from_checkpoint found no completed round) saves the initial policies.
    let metrics: MetricsLog;
    if (ckpt !== undefined) {
      await restoreFromCheckpoint({ ckpt, agents, optimizers, streams, replay, learner: this.learner, counters });
      metrics = new MetricsLog(a.output_dir, { resumeAtLine: ckpt.state.metricsLines, listeners });
      if (run.changes.length > 0) {
        await recordResumeChanges(a.output_dir, ckpt.state.round, run.changes);
        this.log(
          `pbrl: resuming with changed ${run.changes.map((c) => `${c.field} (${JSON.stringify(c.from)} → ${JSON.stringify(c.to)})`).join(", ")}; recorded in config.json`,
        );
      }
      this.log(`pbrl: resumed from ${ckpt.dir} after round ${ckpt.state.round}`);
    } else {
      await writeFileAtomic(path.join(a.output_dir, "config.json"), JSON.stringify({ ...run.record, resume_from_checkpoint: null }, null, 2) + "\n");
      metrics = new MetricsLog(a.output_dir, { listeners });
      await saveInitialPolicies(ckptRoot, agents);
    }
    const customComparator = run.record["custom_comparator"] as PluginRecord | undefined;
    const customReplay = run.record["custom_replay_buffer"] as PluginRecord | undefined;
    this.log(
      `pbrl: ${a.num_iterations} rounds against ${customComparator ? `custom comparator ${pluginLabel(customComparator)}` : `comparator ${comparator.description}`}, replay ${customReplay ? `custom ${pluginLabel(customReplay)}` : a.preference_replay_mode}`,
    );

    const evalRng = streams.get(STREAMS.eval);
    const result: IterTrainResult = {
      rounds: [],
      updates: 0,
      envStep: 0,
      evalBefore: undefined,
      evalAfter: undefined,
      outputDir: a.output_dir,
      resumedAfterRound: ckpt?.state.round,
      stopped: false,
    };
    const evaluate = async (step?: number) => {
      const r = await this.evaluateAndRecord(metrics, counters, evalRng, step, callbacks);
      result.evalBefore ??= r;
      if (r !== undefined) this.evalCurve.push({ round: callbacks.round, value: r["eval/turn_1/reward_mean"] });
    };
    const progress = this.progressMode();
    const session: LearnSession = { agents, optimizers, counters, streams, metrics, evaluate, progress, log: this.log };
    const signals = (this.signals =
      this.options.handleSignals === false
        ? undefined
        : new StopSignals((sig) => this.log(`pbrl: ${sig} received; finishing round and checkpoint, then stopping (send it again to exit at once)`)));
    const tokenizing = agents.map((ag) => ({ tokenizer: ag.tokenizer, eosTokenIds: ag.eosTokenIds }));

    callbacks.round = ckpt?.state.round ?? 0;
    await callbacks.emit("onTrainBegin");
    try {
      for (let round = (ckpt?.state.round ?? 0) + 1; round <= a.num_iterations; round++) {
        // 1. Both sides answer every item; the reward (or people) label the comparisons into pairs.
        await comparator.beginRound(round);
        callbacks.round = round;
        this.options.onRoundStart?.(round);
        await callbacks.emit("onRoundBegin");
        const bar = new ProgressBar(`round ${round}/${a.num_iterations} collection`, items.length, progress);
        const sides = {
          items,
          formatters: this.task.formatters,
          sampler: this.execution.sampler(this.task.policies(agents), samplingSettings(a), streams.get(STREAMS.policy)),
          isValid: this.task.isValid,
          agents: tokenizing,
          comparator,
          numCandidates: a.preference_num_candidates,
          comparatorNumCandidates: a.comparator_num_candidates ?? a.preference_num_candidates,
          rewardConcurrency: a.reward_concurrency,
          rewardTimeoutS: a.reward_timeout_s,
          onWarning: (m) => this.log(`pbrl: round ${round}: ${m}`),
          itemsPerBatch: Math.max(1, Math.floor(a.generation_batch_size / a.preference_num_candidates)),
          onProgress: (done: number) => bar.update(done),
        } satisfies BothSidesOptions;
        const labelled = await this.labelRound(round, sides, run, streams, bar);
        if (labelled === "stopped") {
          result.stopped = true;
          break;
        }
        const { collected, scorer, humanMetrics } = labelled;

        // 2. The round's file first, then the replay's choice of training pairs.
        await replay.addRound(round, collected.pairs, scorer);
        const train = await replay.select(round, collected.pairs, (record) =>
          pairTokensFromRecord(record, tokenizing, `a replayed pair`, { maxPromptLength: a.max_prompt_length }),
        );
        const summary = roundSummary(round, collected, train);
        result.rounds.push(summary);
        await recordRound({
          summary,
          collected,
          train,
          replay: replay.getState(),
          step: counters.envStep,
          metrics,
          tensorboard,
          distributionRange: this.distributionRange,
          distDir: path.join(a.output_dir, "reward_distributions"),
          ...(humanMetrics !== undefined && { extra: humanMetrics }),
        });
        this.log(
          `pbrl: round ${round}: ${summary.pairs} new pairs (comparator won ${summary.comparatorWinRate === null ? "—" : `${(summary.comparatorWinRate * 100).toFixed(0)}%`}), training on ${summary.trainPairs}`,
        );

        // 3. Learning on the selected pairs, with the optimizers that persist across rounds.
        if (train.length === 0) {
          this.log(`pbrl: round ${round}: no preference pairs to train on (this round produced ${summary.pairs}); the policies are unchanged this round`);
        } else {
          const label = `round ${round}/${a.num_iterations}, `;
          const ctx: RoundContext = {
            ...session,
            round,
            newPairs: collected.pairs,
            scorer,
            initialPoliciesDir: policiesAtStartOf(ckptRoot, 1),
            label,
            extra: { round },
          };
          await this.learn(train, ctx);
        }

        // 4. Everything needed to continue after this round.
        const state: TrainingState = {
          format: "pbrl-training-checkpoint/1",
          trainer: this.trainerName,
          round,
          counters: { ...counters },
          rng: streams.getState(),
          replay: replay.getState(),
          metricsLines: metrics.lines,
          numAgents: agents.length,
          seed: a.seed,
          config: checkpointConfig(run.record),
        };
        const saved = await saveTrainingCheckpoint(ckptRoot, state, agents, optimizers, (dir) => this.learner.saveState(dir));
        await callbacks.emit("onSave", saved);
        await this.options.onRoundEnd?.(summary);
        await callbacks.emit("onRoundEnd", summary);
        const stopBy = signals?.requested ? "" : callbacks.control.shouldTrainingStop ? " (a callback set control.shouldTrainingStop)" : undefined;
        if (stopBy !== undefined && round < a.num_iterations) {
          result.stopped = true;
          this.log(`pbrl: stopped after round ${round}${stopBy}; resume with resume_from_checkpoint=true`);
          break;
        }
      }
    } finally {
      signals?.dispose();
    }
    result.updates = counters.updates;
    result.envStep = counters.envStep;
    if (!result.stopped)
      result.evalAfter = await this.finishRun({
        metrics,
        counters,
        evalRng,
        record: run.record,
        done: `${counters.updates} updates over ${a.num_iterations} rounds`,
        callbacks,
      });
    await callbacks.emit("onTrainEnd");
    return result;
  }

  /**
   * Samples both sides of a round and labels its comparisons: with the task reward (or MARLHF's
   * reward model), or by people (preference_labeler="human"). "stopped": a stop request ended the
   * wait for people; the picks are saved, the round is not trained.
   */
  private async labelRound(
    round: number,
    sides: BothSidesOptions & { rewardConcurrency: number },
    run: RoundRun,
    streams: RngStreams,
    bar: ProgressBar,
  ): Promise<{ collected: CompareResult; scorer: PreferenceScorer; humanMetrics?: Record<string, number> } | "stopped"> {
    const a = this.args;
    if (run.judges === undefined) {
      const scoring: PreferenceScoring = this.learner.preferenceScoring(round) ?? {
        scorer: "task",
        rewardFunc: this.taskReward(),
        rewardProcessor: this.options.rewardProcessor,
      };
      try {
        const collected = await collectComparisons({
          ...sides,
          rewardFunc: scoring.rewardFunc,
          rewardProcessor: scoring.rewardProcessor,
          pairSelection: a.pair_selection,
          pairsPerSample: a.preference_pairs_per_sample,
          selectionRng: streams.get(STREAMS.pairs),
        });
        bar.finish();
        return { collected, scorer: scoring.scorer };
      } finally {
        await run.comparator.endRound();
      }
    }
    let open;
    try {
      open = await collectOpenComparisons({
        ...sides,
        comparisonsPerItem: a.human_pairs_per_item,
        // no reward orders the comparisons: pair_selection's random shuffles them, the others keep index order
        order: a.pair_selection === "random" ? "random" : "index",
        selectionRng: streams.get(STREAMS.pairs),
        rewardFunc: this.task.rewardFunc,
        rewardProcessor: this.options.rewardProcessor,
      });
    } finally {
      await run.comparator.endRound();
    }
    bar.finish();
    try {
      const { collected, metrics } = await labelledByPeople(round, run.judges, open, this.actorRoles(run.agents.length), this.log);
      return { collected, scorer: "human", humanMetrics: metrics };
    } catch (e) {
      if (!(e instanceof LabellingStoppedError)) throw e;
      this.log(
        `pbrl: ${e.message}; every saved pick is in ${path.join(a.output_dir, HUMAN_LABELS_DIR)}, and resume_from_checkpoint=true continues this round's labelling without asking for them again`,
      );
      return "stopped";
    }
  }

  /** What the labelling page writes over each agent's part of a joint answer. */
  private actorRoles(numAgents: number): string[] {
    return this.args.collaboration_mode === "centralized" ? ["joint answer (every role)"] : Array.from({ length: numAgents }, (_, i) => `agent ${i}`);
  }

  override dispose(): void {
    this.comparator?.dispose();
    super.dispose();
  }
}

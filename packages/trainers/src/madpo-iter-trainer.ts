import * as path from "node:path";
import { AdamW, guardHeap, RngStreams, writeFileAtomic } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import {
  collectComparisons,
  pairTokensFromRecord,
  roundFileName,
  type CollectedPair,
  type Comparator,
  type PreferenceScorer,
  type ReplayBuffer,
  type RewardFunc,
  type RewardProcessor,
} from "@pbrl/preference-data";
import { OnDiskReplayBuffer } from "@pbrl/replay";
import { disposeAgents, saveAgents, type ResolvedAgent } from "./agents.js";
import { taskSetup, type TaskSetup } from "./collaboration.js";
import { buildComparator } from "./comparator-factory.js";
import { MADPOIterConfig, type MADPOIterConfigInput } from "./config/madpo-iter-config.js";
import { evaluatePolicies, type EvalResult } from "./evaluation.js";
import type { LearnContext } from "./learn-context.js";
import { learnWithMadpo, type TrainingCounters } from "./madpo-epochs.js";
import { agentExecution, type AgentExecution } from "./parallel/agent-execution.js";
import type { MADPOTrainerOptions } from "./madpo-trainer.js";
import { MetricsLog } from "./metrics-log.js";
import { ProgressBar } from "./progress.js";
import { samplingSettings } from "./sampling-settings.js";
import { checkRunMemory } from "./run-memory.js";
import { checkContextRoom, runPromptTokens } from "./prompt-room.js";
import { loadTrainerAgents } from "./trainer-agents.js";
import { checkPushReady, hubBaseModel, pushAgents } from "./push-agents.js";
import { declaredRewardRange, distributionFile, NUM_BINS } from "./reward-distribution.js";
import { openTensorBoard, pairsMarkdown, type TensorBoardLog } from "./tensorboard-log.js";
import { rewardDistributionSvg } from "@pbrl/report";
import { ConfigError } from "./config/define-config.js";
import { StopSignals } from "./stop-signals.js";
import { CheckpointError, loadTrainingCheckpoint, policiesAtStartOf, saveInitialPolicies, saveTrainingCheckpoint, type LoadedCheckpoint, type TrainingState } from "./training-checkpoint.js";
import { checkDataset, recordResumeChanges, runConfigRecord } from "./run-config-record.js";
import { openRunDir, planRunDir, type RunDirOptions, type RunDirPlan } from "./run-dir.js";
import { checkpointConfig, checkResumeChanges, configChanges, type ConfigChange } from "./resume-changes.js";

export interface MADPOIterTrainerOptions extends Omit<MADPOTrainerOptions, "args"> {
  // centralizedAdapter (from MADPOTrainerOptions) also builds and splits the centralized comparator's prompts
  args?: MADPOIterConfig | MADPOIterConfigInput;
  /** Replaces the comparator the config describes (any implementation of the interface). */
  comparator?: Comparator;
  /** Replaces the on-disk replay buffer the config describes. */
  replayBuffer?: ReplayBuffer;
  /** [min, max] of raw rewards for the log_reward_distribution histograms (default: reward_func.reward_range). */
  rewardRange?: [number, number];
  /** Finish the current round, checkpoint and stop on SIGINT/SIGTERM (default true). */
  handleSignals?: boolean;
}

export interface RoundSummary {
  round: number;
  pairs: number;
  trainPairs: number;
  comparatorWinRate: number | null;
  invalidCandidates: { target: number; comparator: number };
  targetRewardMean: number | null;
  comparatorRewardMean: number | null;
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
  /** True when a signal stopped the run after a completed round. */
  stopped: boolean;
}

/** A round's learning step: the shared context plus the round number. */
export interface RoundContext extends LearnContext {
  round: number;
  /** The pairs this round's comparisons produced (the training pairs may include earlier rounds'). */
  newPairs: readonly CollectedPair[];
  /** What labelled this round's comparisons. */
  scorer: PreferenceScorer;
  /** Folder of agent_<i> checkpoints holding the weights before round 1. */
  initialPoliciesDir: string;
}

/** Labels a round's comparisons: a reward function and processor, and its name for the round file. */
export interface PreferenceScoring {
  scorer: PreferenceScorer;
  rewardFunc: RewardFunc;
  rewardProcessor: RewardProcessor | undefined;
}

const STREAMS = { policy: "policy_sampling", comparator: "comparator_sampling", eval: "eval_sampling", pairs: "pair_selection", shuffle: "epoch_shuffle", replay: "replay", apiBackoff: "comparator_api_backoff" } as const;

const mean = (xs: readonly number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * Iterative MADPO: for num_iterations rounds, the current agents and a comparator answer every
 * task item, index-aligned comparisons with a clear winner become pairs, the replay buffer
 * chooses the training pairs from this round and earlier ones, and MADPO trains on them. After
 * every round a checkpoint holds everything needed to continue exactly where the run stopped.
 */
export class MADPOIterTrainer {
  readonly args: MADPOIterConfig;
  /** Names the trainer in config.json and checkpoints. */
  protected readonly trainerName: string = "madpo_iter";
  /** Names the config in its errors. */
  protected readonly configName: string = "MADPOIterConfig";
  protected readonly task: TaskSetup;
  protected readonly log: (line: string) => void;
  /** Where the agents generate and train (parallel_training). */
  protected readonly execution: AgentExecution;
  private resolved: ResolvedAgent[] | undefined;
  private agentsPromise: Promise<ResolvedAgent[]> | undefined;
  private optimizers: AdamW[] = [];
  private comparator: Comparator | undefined;
  /** report_to="tensorboard": the event file of the run in progress. */
  private tensorboard: TensorBoardLog | undefined;
  /** log_reward_distribution's bins: the declared raw reward range, checked at construction as CoMLRL does. */
  private readonly distributionRange: [number, number] | undefined;

  constructor(protected readonly options: MADPOIterTrainerOptions) {
    this.args = isBuilt(options.args) ? options.args : MADPOIterConfig(options.args ?? {});
    if (typeof options.rewardFunc !== "function") throw new TypeError("rewardFunc must be a function (completions, context) => number[]");
    this.task = taskSetup({ collaborationMode: this.args.collaboration_mode, numAgents: this.args.num_agents, formatters: options.formatters, rewardFunc: options.rewardFunc, adapter: options.centralizedAdapter, scoreLastToken: this.args.madpo_score_last_token });
    const verbose = this.args.verbose;
    this.log = options.log ?? ((line) => verbose && process.stderr.write(`${line}\n`));
    this.execution = agentExecution(this.args.parallel_training, this.task.actors, this.log);
    if (this.args.log_reward_distribution) {
      const range = declaredRewardRange(options.rewardRange ?? (options.rewardFunc as { reward_range?: unknown }).reward_range);
      if (typeof range === "string") throw new ConfigError(this.configName, [`log_reward_distribution: ${range}`]);
      this.distributionRange = range;
    }
  }

  async agents(): Promise<ResolvedAgent[]> {
    this.agentsPromise ??= (async () => {
      const { agents } = await loadTrainerAgents({ trainerName: this.trainerName, configName: this.configName, args: this.args, task: this.task, sources: this.options, log: this.log });
      this.resolved = agents;
      this.checkAgents(agents);
      return agents;
    })();
    return this.agentsPromise;
  }

  /** Labels round `round`'s comparisons (MADPO: always the task reward). */
  protected preferenceScoring(_round: number): PreferenceScoring {
    return { scorer: "task", rewardFunc: this.task.rewardFunc, rewardProcessor: this.options.rewardProcessor };
  }

  /** Trains the agents on the round's selected pairs (MADPO for num_train_epochs). */
  protected async learn(train: readonly CollectedPair[], ctx: RoundContext): Promise<void> {
    await learnWithMadpo(train, ctx, { ...this.args, madpo_score_last_token: this.task.scoreLastToken }, this.execution, ctx.streams.get(STREAMS.shuffle));
  }

  /** Writes what the learning step keeps across rounds into a checkpoint folder being assembled (MADPO: nothing). */
  protected async saveLearnerState(_dir: string): Promise<void> {}

  /** Restores what {@link saveLearnerState} wrote. */
  protected async restoreLearnerState(_dir: string): Promise<void> {}

  /** Checks what depends on the agents' sources before any work is done (MARLHF: reward-model and critic sources). */
  protected checkAgents(_agents: readonly ResolvedAgent[]): void {}

  /**
   * Runs the rounds. A run the backend's tensor memory cannot hold stops before anything is
   * written, with a MemoryBudgetError (run-memory.ts); a kernel that runs out of heap anyway gives one too.
   */
  async train(): Promise<IterTrainResult> {
    return guardHeap("training", () => this.trainRounds());
  }

  private async trainRounds(): Promise<IterTrainResult> {
    const a = this.args;
    const outputDir = a.output_dir;
    const ckptRoot = a.policy_checkpoint_dir ?? path.join(outputDir, "checkpoints");
    const replayDir = a.preference_replay_dir ?? path.join(outputDir, "preference_replay");
    const distDir = path.join(outputDir, "reward_distributions");
    // Everything is read and checked before output_dir is touched: a run that cannot start leaves it as it was.
    checkDataset(this.configName, this.options.trainDataset);
    checkPushReady(this.configName, a);
    const dirOptions: RunDirOptions = { outputDir, extraDirs: [a.policy_checkpoint_dir, a.preference_replay_dir].filter((d): d is string => d !== null), resumeLatest: a.resume_from_checkpoint === true, checkpointsDir: ckptRoot, overwrite: a.overwrite_output_dir, trainer: this.trainerName, log: this.log };
    const resumeSpec = a.resume_from_checkpoint;
    const plan: RunDirPlan = typeof resumeSpec === "string" ? (planRunDir({ ...dirOptions, resumeLatest: false, overwrite: true }), { resume: true, replace: [] }) : planRunDir(dirOptions);
    const agents = await this.agents();
    const promptTokens = runPromptTokens(agents, this.task.formatters, this.options.trainDataset, a);
    checkRunMemory(this.trainerName, a, agents, promptTokens, this.options.trainDataset.length);
    checkContextRoom(agents, promptTokens, a);
    const record = runConfigRecord(this.trainerName, a);
    const ckpt = plan.resume ? await loadTrainingCheckpoint(typeof resumeSpec === "string" ? resumeSpec : true, ckptRoot) : undefined;
    let changes: ConfigChange[] = [];
    if (ckpt !== undefined) {
      const s = ckpt.state;
      if (s.trainer !== this.trainerName) throw new CheckpointError(`resume_from_checkpoint: ${ckpt.dir} was written by trainer=${s.trainer}; this run is trainer=${this.trainerName}`);
      if (s.numAgents !== agents.length || s.seed !== a.seed) throw new CheckpointError(`resume_from_checkpoint: ${ckpt.dir} was written by a run with ${s.numAgents} agents and seed ${s.seed}; this run has ${agents.length} and ${a.seed}`);
      if (s.round > a.num_iterations) throw new CheckpointError(`resume_from_checkpoint: ${ckpt.dir} is after round ${s.round}, beyond num_iterations=${a.num_iterations}; raise num_iterations to continue past it`);
      if (s.config !== undefined) changes = checkResumeChanges(configChanges(s.config, record), ckpt.dir);
    }
    const streams = new RngStreams(a.seed);
    // One actor writing every role answers the joint prompt itself, so its comparator samples
    // that prompt directly rather than splitting and re-joining roles.
    const comparatorArgs = a.collaboration_mode === "centralized" ? { ...a, comparator_generation_mode: "decentralized" as const } : a;
    this.comparator = this.options.comparator ?? (await buildComparator({ args: comparatorArgs, agents, rng: streams.get(STREAMS.comparator), backoffRng: streams.get(STREAMS.apiBackoff), log: this.log, generation: samplingSettings(this.args), adapter: this.options.centralizedAdapter, weightsAt: (round) => policiesAtStartOf(ckptRoot, round) }));
    const comparator = this.comparator;

    const releaseRunDir = openRunDir(dirOptions, plan);
    try {
      return await this.runRounds({ agents, streams, comparator, ckpt, changes, record, outputDir, ckptRoot, replayDir, distDir });
    } finally {
      this.tensorboard?.close();
      this.tensorboard = undefined;
      releaseRunDir();
    }
  }

  private async runRounds(o: { agents: ResolvedAgent[]; streams: RngStreams; comparator: Comparator; ckpt: LoadedCheckpoint | undefined; changes: ConfigChange[]; record: Record<string, unknown>; outputDir: string; ckptRoot: string; replayDir: string; distDir: string }): Promise<IterTrainResult> {
    const a = this.args;
    const { agents, streams, comparator, ckpt, outputDir, ckptRoot, replayDir, distDir } = o;
    this.optimizers = agents.map((ag) => new AdamW(ag.model.params, { lr: a.agent_learning_rate }));
    const counters: TrainingCounters = { updates: 0, envStep: 0, lastLogged: undefined };
    const replay = this.options.replayBuffer ?? new OnDiskReplayBuffer({ mode: a.preference_replay_mode, k: a.preference_replay_k, lambda: a.preference_replay_lambda, sampleSize: a.preference_replay_sample_size, dir: replayDir, rng: streams.get(STREAMS.replay) });

    // Resume: weights, optimizer moments, every stream (in place), the replay index, the metrics cursor.
    let startRound = 1;
    let metrics: MetricsLog;
    const tensorboard = a.report_to === "tensorboard" ? openTensorBoard(outputDir, ckpt?.state.counters.envStep) : undefined;
    this.tensorboard = tensorboard;
    const listeners = [this.options.onLog, tensorboard?.listener];
    let resumedAfterRound: number | undefined;
    if (ckpt !== undefined) {
      const s = ckpt.state;
      for (const [i, ag] of agents.entries()) {
        const saved = await loadPretrained(path.join(ckpt.agentsDir, `agent_${i}`), { device: ag.model.device() });
        ag.model.copyWeightsFrom(saved.model);
        saved.model.dispose();
        this.optimizers[i]!.setState(ckpt.optimizers[i]!);
      }
      streams.setState(s.rng);
      await replay.restore(s.replay);
      await this.restoreLearnerState(ckpt.dir);
      Object.assign(counters, s.counters);
      metrics = new MetricsLog(outputDir, { resumeAtLine: s.metricsLines, listeners });
      if (o.changes.length > 0) {
        await recordResumeChanges(outputDir, s.round, o.changes);
        this.log(`pbrl: resuming with changed ${o.changes.map((c) => `${c.field} (${JSON.stringify(c.from)} → ${JSON.stringify(c.to)})`).join(", ")}; recorded in config.json`);
      }
      startRound = s.round + 1;
      resumedAfterRound = s.round;
      this.log(`pbrl: resumed from ${ckpt.dir} after round ${s.round}`);
    } else {
      // This run starts from scratch, also when resume_from_checkpoint found no completed round to continue.
      await writeFileAtomic(path.join(outputDir, "config.json"), JSON.stringify({ ...o.record, resume_from_checkpoint: null }, null, 2) + "\n");
      metrics = new MetricsLog(outputDir, { listeners });
      await saveInitialPolicies(ckptRoot, agents);
    }
    this.log(`pbrl: ${a.num_iterations} rounds against comparator ${comparator.description}, replay ${a.preference_replay_mode}`);

    const evalRng = streams.get(STREAMS.eval);
    const result: IterTrainResult = { rounds: [], updates: 0, envStep: 0, evalBefore: undefined, evalAfter: undefined, outputDir, resumedAfterRound, stopped: false };
    const runEval = async (): Promise<EvalResult | undefined> => {
      const items = (this.options.evalDataset ?? []).slice(0, a.eval_num_samples);
      if (items.length === 0) return undefined;
      this.log(`pbrl: evaluating on ${items.length} eval items after ${counters.updates} updates`);
      const r = await evaluatePolicies({ policies: agents, items, formatters: this.task.formatters, rewardFunc: this.task.rewardFunc, rewardProcessor: this.options.rewardProcessor, settings: samplingSettings(this.args), rng: evalRng, concurrency: a.reward_concurrency, rewardTimeoutS: a.reward_timeout_s, onWarning: (m) => this.log(`pbrl: eval: ${m}`) });
      metrics.write({ kind: "eval", step: counters.envStep, update: counters.updates, "eval/turn_1/reward_mean": r["eval/turn_1/reward_mean"], "eval/turn_1/expected_return": r["eval/turn_1/expected_return"] });
      this.log(`pbrl: eval after ${counters.updates} updates: reward ${r["eval/turn_1/reward_mean"].toFixed(4)}`);
      return r;
    };
    const progress = ProgressBar.enabledFor(a.verbose);
    const signals = this.options.handleSignals === false ? undefined : new StopSignals((sig) => this.log(`pbrl: ${sig} received; finishing round and checkpoint, then stopping (send it again to exit at once)`));
    const tokenizing = agents.map((ag) => ({ tokenizer: ag.tokenizer, eosTokenIds: ag.eosTokenIds }));

    try {
      for (let round = startRound; round <= a.num_iterations; round++) {
        const label = `round ${round}/${a.num_iterations}, `;
        // 1. Both sides answer every item; comparisons with a clear winner become pairs.
        const bar = new ProgressBar(`round ${round}/${a.num_iterations} collection`, this.options.trainDataset.length, progress);
        await comparator.beginRound(round);
        const scoring = this.preferenceScoring(round);
        let collected;
        try {
          collected = await collectComparisons({
            items: this.options.trainDataset,
            formatters: this.task.formatters,
            sampler: this.execution.sampler(agents, samplingSettings(this.args), streams.get(STREAMS.policy)),
            isValid: this.task.isValid,
            agents: tokenizing,
            comparator,
            rewardFunc: scoring.rewardFunc,
            rewardProcessor: scoring.rewardProcessor,
            numCandidates: a.preference_num_candidates,
            comparatorNumCandidates: a.comparator_num_candidates ?? a.preference_num_candidates,
            pairSelection: a.pair_selection,
            pairsPerSample: a.preference_pairs_per_sample,
            selectionRng: streams.get(STREAMS.pairs),
            rewardConcurrency: a.reward_concurrency,
            rewardTimeoutS: a.reward_timeout_s,
            onWarning: (m) => this.log(`pbrl: round ${round}: ${m}`),
            itemsPerBatch: Math.max(1, Math.floor(a.generation_batch_size / a.preference_num_candidates)),
            onProgress: (done) => bar.update(done),
          });
        } finally {
          await comparator.endRound();
        }
        bar.finish();

        // 2. The round's file first, then the replay's choice of training pairs.
        await replay.addRound(round, collected.pairs, scoring.scorer);
        const train = await replay.select(round, collected.pairs, (record) => pairTokensFromRecord(record, tokenizing, `a replayed pair`, { maxPromptLength: a.max_prompt_length }));
        const wins = collected.wins.target + collected.wins.comparator;
        const summary: RoundSummary = {
          round,
          pairs: collected.pairs.length,
          trainPairs: train.length,
          comparatorWinRate: wins === 0 ? null : collected.wins.comparator / wins,
          invalidCandidates: collected.invalid,
          targetRewardMean: mean(collected.rawRewards.target),
          comparatorRewardMean: mean(collected.rawRewards.comparator),
        };
        result.rounds.push(summary);
        const selected = { target: train.flatMap((p) => (typeof p.record.target_raw_reward === "number" ? [p.record.target_raw_reward] : [])), comparator: train.flatMap((p) => (typeof p.record.comparator_raw_reward === "number" ? [p.record.comparator_raw_reward] : [])) };
        if (this.distributionRange !== undefined) {
          const dist = distributionFile(round, this.distributionRange, collected.rawRewards, selected);
          await writeFileAtomic(path.join(distDir, roundFileName(round)), JSON.stringify(dist, null, 2) + "\n");
          // CoMLRL's per-round plot: target vs comparator, all candidates and the selected pairs
          await writeFileAtomic(path.join(distDir, roundFileName(round).replace(/\.json$/, ".svg")), rewardDistributionSvg(dist));
          for (const side of ["target", "comparator"] as const) tensorboard?.histogram(counters.envStep, `reward_distribution/${side}`, collected.rawRewards[side], this.distributionRange, NUM_BINS);
        }
        tensorboard?.text(counters.envStep, "samples/round_pairs", pairsMarkdown(collected.pairs.map((p) => p.record)));
        metrics.write({
          kind: "round",
          step: counters.envStep,
          "iter/current_iteration": round,
          "iter/current_preference_pairs": summary.pairs,
          "iter/total_preference_pairs": replay.getState().entries.reduce((s, e) => s + e.num_pairs, 0),
          "iter/train_preference_pairs": summary.trainPairs,
          "iter/replayed_train_pairs": replayedCount(train, collected.pairs),
          "iter/comparator_win_rate": summary.comparatorWinRate ?? Number.NaN,
          "iter/invalid_target_candidates": collected.invalid.target,
          "iter/invalid_comparator_candidates": collected.invalid.comparator,
          "iter/target_reward_mean": summary.targetRewardMean ?? Number.NaN,
          "iter/comparator_reward_mean": summary.comparatorRewardMean ?? Number.NaN,
        });
        this.log(`pbrl: round ${round}: ${summary.pairs} new pairs (comparator won ${summary.comparatorWinRate === null ? "—" : `${(summary.comparatorWinRate * 100).toFixed(0)}%`}), training on ${summary.trainPairs}`);

        // 3. Learning on the selected pairs, with the optimizers that persist across rounds.
        if (train.length === 0) {
          this.log(`pbrl: round ${round}: no preference pairs to train on (this round produced ${summary.pairs}); the policies are unchanged this round`);
        } else {
          const evaluate = async () => {
            const r = await runEval();
            result.evalBefore ??= r;
          };
          await this.learn(train, { round, newPairs: collected.pairs, scorer: scoring.scorer, initialPoliciesDir: policiesAtStartOf(ckptRoot, 1), label, agents, optimizers: this.optimizers, counters, streams, metrics, evaluate, progress, log: this.log, extra: { round } });
        }

        // 4. Everything needed to continue after this round.
        const state: TrainingState = { format: "pbrl-training-checkpoint/1", trainer: this.trainerName, round, counters: { ...counters }, rng: streams.getState(), replay: replay.getState(), metricsLines: metrics.lines, numAgents: agents.length, seed: a.seed, config: checkpointConfig(o.record) };
        await saveTrainingCheckpoint(ckptRoot, state, agents, this.optimizers, (dir) => this.saveLearnerState(dir));
        if (signals?.requested && round < a.num_iterations) {
          result.stopped = true;
          this.log(`pbrl: stopped after round ${round}; resume with resume_from_checkpoint=true`);
          break;
        }
      }
    } finally {
      signals?.dispose();
    }
    result.updates = counters.updates;
    result.envStep = counters.envStep;
    if (!result.stopped) {
      if (a.eval_interval > 0) result.evalAfter = await runEval();
      const dir = path.join(outputDir, "agents");
      await saveAgents(dir, agents, this.args.save_dtype);
      this.log(`pbrl: ${counters.updates} updates over ${a.num_iterations} rounds; agents saved under ${dir}`);
      if (a.push_to_hub) await pushAgents({ agentsDir: dir, repo: a.hub_model_id!, private: a.hub_private_repo, trainer: this.trainerName, record: o.record, evalAfter: result.evalAfter, baseModel: hubBaseModel(this.options.agentModel), log: this.log });
    }
    return result;
  }

  dispose(): void {
    void this.execution.close();
    this.comparator?.dispose();
    for (const o of this.optimizers) o.dispose();
    disposeAgents(this.resolved ?? []);
  }
}

/** Training pairs that come from earlier rounds (the replay buffer reads pairs back from files, so they are matched by content). */
function replayedCount(train: readonly CollectedPair[], current: readonly CollectedPair[]): number {
  const key = (p: CollectedPair) => JSON.stringify([p.record.prompts, p.record.winner_completions, p.record.loser_completions]);
  const fresh = new Set(current.map(key));
  return train.filter((p) => !fresh.has(key(p))).length;
}

function isBuilt(args: MADPOIterConfig | MADPOIterConfigInput | undefined): args is MADPOIterConfig {
  return args !== undefined && Object.isFrozen(args) && "num_iterations" in args && typeof args.train_batch_size === "number";
}

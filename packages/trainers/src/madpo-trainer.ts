import * as path from "node:path";
import { AdamW, guardHeap, RngStreams, writeFileAtomic, type BackendInfo } from "@pbrl/core-tensor";
import type { Tokenizer } from "@pbrl/models";
import {
  collectPreferencePairs,
  type CollectedPair,
  writePairsFile,
  type CentralizedAdapter,
  type Formatter,
  type RewardFunc,
  type RewardProcessor,
  type TaskItem,
} from "@pbrl/preference-data";
import { disposeAgents, saveAgents, type AgentSource, type ResolvedAgent } from "./agents.js";
import { taskSetup, type TaskSetup } from "./collaboration.js";
import { MADPOConfig, type MADPOConfigInput } from "./config/madpo-config.js";
import { evaluatePolicies, type EvalResult } from "./evaluation.js";
import type { LearnContext } from "./learn-context.js";
import { learnWithMadpo, type TrainingCounters } from "./madpo-epochs.js";
import { agentExecution, type AgentExecution } from "./parallel/agent-execution.js";
import { MetricsLog, type MetricsListener } from "./metrics-log.js";
import { checkDataset, runConfigRecord } from "./run-config-record.js";
import { openTensorBoard } from "./tensorboard-log.js";
import { openRunDir, planRunDir, type RunDirOptions } from "./run-dir.js";
import { ProgressBar } from "./progress.js";
import { samplingSettings } from "./sampling-settings.js";
import { checkRunMemory } from "./run-memory.js";
import { checkContextRoom, runPromptTokens } from "./prompt-room.js";
import { loadTrainerAgents } from "./trainer-agents.js";
import { checkPushReady, hubBaseModel, pushAgents } from "./push-agents.js";

export interface MADPOTrainerOptions {
  /** One source per agent: checkpoint folders, hub ids, built models or loaded checkpoints. */
  agents?: readonly AgentSource[];
  /** One checkpoint (folder or hub id) for every agent; each agent gets its own copy. */
  agentModel?: string;
  /** Tokenizer(s) for model objects, or to override a checkpoint's: one shared or one per agent. */
  tokenizer?: Tokenizer | readonly Tokenizer[];
  trainDataset: readonly TaskItem[];
  evalDataset?: readonly TaskItem[];
  rewardFunc: RewardFunc;
  rewardProcessor?: RewardProcessor;
  /** One formatter per agent (per role when centralized), or one shared; default: the item's `prompt` field. */
  formatters?: Formatter | readonly Formatter[];
  args?: MADPOConfig | MADPOConfigInput;
  /** collaboration_mode="centralized": builds the joint prompt and splits the joint completion (default: the tagged adapter). */
  centralizedAdapter?: CentralizedAdapter;
  /** Where progress lines go when verbose (default: stderr). */
  log?: (line: string) => void;
  /** Receives every metrics record as it is written to metrics.jsonl (with `time` and `elapsed_s`), e.g. to stream it to your own tracker. */
  onLog?: MetricsListener;
}

export interface TrainResult {
  numPairs: number;
  updates: number;
  envStep: number;
  /** False when no item produced a non-tied pair: the policies were left untouched. */
  trained: boolean;
  evalBefore: EvalResult | undefined;
  evalAfter: EvalResult | undefined;
  outputDir: string;
}

const STREAMS = { policy: "policy_sampling", eval: "eval_sampling", pairs: "pair_selection", shuffle: "epoch_shuffle" } as const;

/**
 * MADPO: collect preference pairs once from the initial policies, then train every agent on them
 * for num_train_epochs with the multi-agent DPO loss. Metrics go to `<output_dir>/metrics.jsonl`,
 * the collected pairs to `<output_dir>/preference_pairs.json`, and the trained agents to
 * `<output_dir>/agents/agent_<i>` as Hugging Face checkpoints.
 */
export class MADPOTrainer {
  readonly args: MADPOConfig;
  /** Names the trainer in config.json. */
  protected readonly trainerName: string = "madpo";
  /** Names the config in its errors. */
  protected readonly configName: string = "MADPOConfig";
  protected readonly task: TaskSetup;
  protected readonly log: (line: string) => void;
  /** Where the agents generate and train (parallel_training). */
  protected readonly execution: AgentExecution;
  private agentsPromise: Promise<ResolvedAgent[]> | undefined;
  private resolved: ResolvedAgent[] | undefined;
  private optimizers: AdamW[] = [];
  backend: BackendInfo | undefined;

  constructor(protected readonly options: MADPOTrainerOptions) {
    this.args = isBuilt(options.args) ? options.args : MADPOConfig(options.args ?? {});
    if (typeof options.rewardFunc !== "function") throw new TypeError("rewardFunc must be a function (completions, context) => number[]");
    this.task = taskSetup({ collaborationMode: this.args.collaboration_mode, numAgents: this.args.num_agents, formatters: options.formatters, rewardFunc: options.rewardFunc, adapter: options.centralizedAdapter, scoreLastToken: this.args.madpo_score_last_token });
    const verbose = this.args.verbose;
    this.log = options.log ?? ((line) => verbose && process.stderr.write(`${line}\n`));
    this.execution = agentExecution(this.args.parallel_training, this.task.actors, this.log);
  }

  /** The agents, loaded on first use (after the backend is chosen). */
  async agents(): Promise<ResolvedAgent[]> {
    this.agentsPromise ??= (async () => {
      const { compute, agents } = await loadTrainerAgents({ trainerName: this.trainerName, configName: this.configName, args: this.args, task: this.task, sources: this.options, log: this.log });
      this.backend = compute.backend;
      if (this.args.reference_kl_enabled && this.trainerName === "madpo") this.log("pbrl: reference_kl_enabled has no effect on MADPO, whose objective has no reference model");
      this.resolved = agents;
      this.checkAgents(agents);
      return agents;
    })();
    return this.agentsPromise;
  }

  /** Samples the current policies on the eval set and scores them with the task reward. */
  async evaluate(rng = new RngStreams(this.args.seed).get(STREAMS.eval)): Promise<EvalResult | undefined> {
    const items = (this.options.evalDataset ?? []).slice(0, this.args.eval_num_samples);
    if (items.length === 0) return undefined;
    return evaluatePolicies({
      policies: await this.agents(),
      items,
      formatters: this.task.formatters,
      rewardFunc: this.task.rewardFunc,
      rewardProcessor: this.options.rewardProcessor,
      settings: samplingSettings(this.args),
      rng,
      concurrency: this.args.reward_concurrency,
      rewardTimeoutS: this.args.reward_timeout_s,
      onWarning: (m) => this.log(`pbrl: eval: ${m}`),
    });
  }

  /** Checks what depends on the agents' sources before any work is done (MARLHF: reward-model and critic sources). */
  protected checkAgents(_agents: readonly ResolvedAgent[]): void {}

  /**
   * Runs MADPO. A run the backend's tensor memory cannot hold stops before anything is written,
   * with a MemoryBudgetError (run-memory.ts); a kernel that runs out of heap anyway gives one too.
   */
  async train(): Promise<TrainResult> {
    return guardHeap("training", () => this.trainRun());
  }

  private async trainRun(): Promise<TrainResult> {
    const a = this.args;
    // Everything is read and checked before output_dir is touched: a run that cannot start leaves it as it was.
    checkDataset(this.configName, this.options.trainDataset);
    checkPushReady(this.configName, a);
    const dirOptions: RunDirOptions = { outputDir: a.output_dir, resumeLatest: false, overwrite: a.overwrite_output_dir, trainer: this.trainerName, log: this.log };
    const plan = planRunDir(dirOptions);
    const agents = await this.agents();
    const promptTokens = runPromptTokens(agents, this.task.formatters, this.options.trainDataset, a);
    checkRunMemory(this.trainerName, a, agents, promptTokens, this.options.trainDataset.length);
    checkContextRoom(agents, promptTokens, a);
    const release = openRunDir(dirOptions, plan);
    try {
      return await this.runWith(agents);
    } finally {
      release();
    }
  }

  private async runWith(agents: ResolvedAgent[]): Promise<TrainResult> {
    const a = this.args;
    const streams = new RngStreams(a.seed);
    const outputDir = a.output_dir;
    await writeFileAtomic(path.join(outputDir, "config.json"), JSON.stringify(runConfigRecord(this.trainerName, a), null, 2) + "\n");
    const tensorboard = a.report_to === "tensorboard" ? openTensorBoard(outputDir) : undefined;
    try {
      return await this.collectAndLearn(agents, streams, new MetricsLog(outputDir, { listeners: [this.options.onLog, tensorboard?.listener] }));
    } finally {
      tensorboard?.close();
    }
  }

  private async collectAndLearn(agents: ResolvedAgent[], streams: RngStreams, metrics: MetricsLog): Promise<TrainResult> {
    const a = this.args;
    const outputDir = a.output_dir;
    const progressOn = ProgressBar.enabledFor(a.verbose);

    // 1. Preference data, once, from the initial policies.
    const items = this.options.trainDataset;
    const collectBar = new ProgressBar("MADPO preference rollout", items.length, progressOn);
    const collected = await collectPreferencePairs({
      items,
      formatters: this.task.formatters,
      sampler: this.execution.sampler(agents, samplingSettings(this.args), streams.get(STREAMS.policy)),
      rewardFunc: this.task.rewardFunc,
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
    await writePairsFile(path.join(outputDir, "preference_pairs.json"), pairs.map((p) => p.record));
    const allRewards = collected.candidateRewards.flat();
    metrics.write({
      kind: "collect",
      step: 0,
      "preference/num_pairs": pairs.length,
      "preference/items_with_pairs": collected.itemsWithPairs,
      "preference/items": items.length,
      "preference/invalid_candidates": collected.invalidCandidates,
      "preference/candidate_reward_mean": allRewards.length ? allRewards.reduce((s, x) => s + x, 0) / allRewards.length : 0,
    });
    this.log(`pbrl: collected ${pairs.length} preference pairs from ${collected.itemsWithPairs} of ${items.length} items`);
    const result: TrainResult = { numPairs: pairs.length, updates: 0, envStep: 0, trained: false, evalBefore: undefined, evalAfter: undefined, outputDir };
    if (pairs.length === 0) {
      this.log("pbrl: no item produced a non-tied preference pair; the policies were not updated (more candidates, a higher temperature or a finer-grained reward may help)");
      return result;
    }

    // 2. Learning on the fixed pairs.
    this.optimizers = agents.map((ag) => new AdamW(ag.model.params, { lr: a.agent_learning_rate }));
    const evalRng = streams.get(STREAMS.eval);
    const counters: TrainingCounters = { updates: 0, envStep: 0, lastLogged: undefined };
    const runEval = async (): Promise<EvalResult | undefined> => {
      if ((this.options.evalDataset ?? []).length > 0 && a.eval_num_samples > 0) this.log(`pbrl: evaluating on ${Math.min(a.eval_num_samples, this.options.evalDataset!.length)} eval items after ${counters.updates} updates`);
      const r = await this.evaluate(evalRng);
      if (r !== undefined) {
        metrics.write({ kind: "eval", step: counters.envStep, update: counters.updates, "eval/turn_1/reward_mean": r["eval/turn_1/reward_mean"], "eval/turn_1/expected_return": r["eval/turn_1/expected_return"] });
        this.log(`pbrl: eval after ${counters.updates} updates: reward ${r["eval/turn_1/reward_mean"].toFixed(4)}`);
      }
      return r;
    };
    const evaluate = async () => {
      const r = await runEval();
      result.evalBefore ??= r;
    };
    await this.learn(pairs, { label: "", agents, optimizers: this.optimizers, counters, streams, metrics, evaluate, progress: progressOn, log: this.log, extra: {} });
    result.updates = counters.updates;
    result.envStep = counters.envStep;
    result.trained = true;
    if (a.eval_interval > 0) result.evalAfter = await runEval();

    // 3. The trained agents, as Hugging Face checkpoints.
    await this.saveModel(path.join(outputDir, "agents"));
    this.log(`pbrl: ${result.updates} updates; agents saved under ${path.join(outputDir, "agents")}`);
    if (a.push_to_hub) await pushAgents({ agentsDir: path.join(outputDir, "agents"), repo: a.hub_model_id!, private: a.hub_private_repo, trainer: this.trainerName, record: runConfigRecord(this.trainerName, a), evalAfter: result.evalAfter, baseModel: hubBaseModel(this.options.agentModel), log: this.log });
    return result;
  }

  /** Trains the agents on the collected pairs (MADPO for num_train_epochs). */
  protected async learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    await learnWithMadpo(pairs, ctx, { ...this.args, madpo_score_last_token: this.task.scoreLastToken }, this.execution, ctx.streams.get(STREAMS.shuffle));
  }

  /** Writes every agent to `<dir>/agent_<i>` as a Hugging Face checkpoint folder. */
  async saveModel(dir: string): Promise<void> {
    const agents = await this.agents();
    await saveAgents(dir, agents, this.args.save_dtype);
  }

  /** Frees the agents' weights and optimizer state. */
  dispose(): void {
    void this.execution.close();
    for (const o of this.optimizers) o.dispose();
    disposeAgents(this.resolved ?? []);
  }
}

function isBuilt(args: MADPOConfig | MADPOConfigInput | undefined): args is MADPOConfig {
  return args !== undefined && Object.isFrozen(args) && "train_batch_size" in args && typeof args.train_batch_size === "number";
}

/**
 * What all four trainers share, whatever their schedule (collect once, or every round) and their
 * learning step (MADPO, or MARLHF): the task, the agents (loaded once the backend is chosen),
 * the checks made before output_dir is touched, evaluation with the task reward, saving and
 * pushing the trained agents, and freeing everything.
 */
import * as path from "node:path";
import { AdamW, releaseCachedMemory, RngStreams, type BackendInfo, type RngStream } from "@pbrl/core-tensor";
import type { CausalLM, Tokenizer } from "@pbrl/models";
import type { AsyncFormatter, CentralizedAdapter, CollectedPair, DatasetName, RewardFunc, RewardProcessor, TaskItem } from "@pbrl/preference-data";
import type { JointRewardModel } from "@pbrl/reward-model";
import { disposeAgents, saveAgents, type AgentSource, type ResolvedAgent } from "./agents.js";
import { taskSetup, type TaskSetup } from "./collaboration.js";
import { ConfigError } from "./config/define-config.js";
import type { PreferenceConfig } from "./config/madpo-config.js";
import type { IterativeConfig } from "./config/madpo-iter-config.js";
import { evaluatePolicies, type EvalResult } from "./evaluation.js";
import type { RunCallbacks, TrainerCallback } from "./callbacks.js";
import type { LearnContext, Learner } from "./learner.js";
import type { MetricsListener, MetricsLog } from "./metrics-log.js";
import { agentExecution, type AgentExecution } from "./parallel/agent-execution.js";
import { checkDdp } from "./parallel/ddp-check.js";
import { ProgressBar, type ProgressMode } from "./progress.js";
import { renderRunPrompts } from "./prompt-rendering.js";
import { checkContextRoom, runPromptTokens } from "./prompt-room.js";
import { checkPushReady, hubBaseModel, pushAgents } from "./push-agents.js";
import { checkDataset } from "./run-config-record.js";
import type { RunDirPlan } from "./run-dir.js";
import { checkRunMemory, describeRunMemory } from "./run-memory.js";
import { samplingSettings } from "./sampling-settings.js";
import { stoppableStart } from "./stop-signals.js";
import { STREAMS } from "./stream-names.js";
import { loadTrainerAgents } from "./trainer-agents.js";
import { RunDatasets, type TrainerDataset } from "./trainer-datasets.js";
import type { TrainingCounters } from "./training-counters.js";

/** The options every trainer takes besides its config. */
export interface TrainerOptions {
  /** One source per agent: checkpoint folders, hub ids, built models or loaded checkpoints. */
  agents?: readonly AgentSource[];
  /** One checkpoint (folder or hub id) for every agent; each agent gets its own copy. */
  agentModel?: string;
  /** Tokenizer(s) for model objects, or to override a checkpoint's: one shared or one per agent. */
  tokenizer?: Tokenizer | readonly Tokenizer[];
  /** The train items, or a dataset source loaded before the run starts (a file, dataset folder or hub id; see loadDataset). */
  trainDataset: TrainerDataset;
  /** The eval items, or a dataset source (its split defaults to "test"). */
  evalDataset?: TrainerDataset;
  /** The task reward (the oracle); optional only with preference_labeler="human", where it scores evaluation and human_fallback when given. */
  rewardFunc?: RewardFunc;
  rewardProcessor?: RewardProcessor;
  /**
   * One formatter per agent (per role when centralized), or one shared; default: the item's
   * `prompt` field. Each runs once per train and eval item, before the run starts (its prompts are
   * rendered then, and rounds read them); it may return a Promise. Functions run in this thread,
   * where one that never returns cannot be abandoned (`pbrl train` runs a formatters module in a
   * worker thread); a Promise is given reward_timeout_s.
   */
  formatters?: AsyncFormatter | readonly AsyncFormatter[];
  /** collaboration_mode="centralized": builds the joint prompt and splits the joint completion (default: the tagged adapter); iterative: the centralized comparator's too. */
  centralizedAdapter?: CentralizedAdapter;
  /**
   * Where the run's log lines go, progress lines included (default: stderr when verbose). Given,
   * it receives every log line, and when verbose the progress of long phases as plain lines (at
   * most one every few seconds per phase, and one as a phase ends).
   */
  log?: (line: string) => void;
  /** Receives every metrics record as it is written to metrics.jsonl (with `time` and `elapsed_s`), e.g. to stream it to your own tracker. */
  onLog?: MetricsListener;
  /**
   * Called at the run's events (TRL's TrainerCallback shape: onTrainBegin, onRoundBegin, onLog,
   * onEvaluate, onSave, onRoundEnd, onTrainEnd), each with the run's state and a control object;
   * `control.shouldTrainingStop = true` stops the run cleanly (see callbacks.ts). This is the way
   * to stop a run from code; one that throws fails the run (as throwing from onRoundEnd always did).
   */
  callbacks?: readonly TrainerCallback[];
  /**
   * Files and folders the run reads besides its models, by the setting that names them (the CLI
   * passes its datasets and reward/formatter modules, e.g. `{ train_dataset: "data/train.jsonl" }`):
   * output_dir and the checkpoint/replay folders may not be one, lie inside one, or hold one
   * where the run writes; the run stops before writing anything otherwise.
   */
  inputPaths?: Readonly<Record<string, string>>;
  /**
   * SIGINT/SIGTERM (default true): while the run starts (agents, prompts), the first stops it
   * before output_dir is touched (a RunStoppedError); during an iterative trainer's rounds, it
   * finishes the round and its checkpoint, then stops. A second exits at once (code 130).
   */
  handleSignals?: boolean;
}

/** The configs a trainer runs with (each trainer's extends one of these). */
export type TrainerConfig = PreferenceConfig | IterativeConfig;

/** How a trainer names itself: in config.json and checkpoints, and in its config's errors. */
export interface TrainerNames {
  trainerName: string;
  configName: string;
}

/** What a trainer builds its learner from. */
export interface LearnerParts {
  task: TaskSetup;
  execution: AgentExecution;
  log: (line: string) => void;
  /** The run's train items (loaded before the learner runs). */
  trainItems: () => readonly TaskItem[];
}

/** A config object already built by its builder (frozen, defaults filled) is used as it is; anything else is input to the builder. */
export function configFrom<C, I>(given: C | I | undefined, build: (input: I) => C, marker: string): C {
  const built =
    given !== undefined &&
    Object.isFrozen(given) &&
    marker in (given as object) &&
    typeof (given as { train_batch_size?: unknown }).train_batch_size === "number";
  return built ? (given as C) : build((given ?? {}) as I);
}

export abstract class TrainerCore<C extends TrainerConfig> {
  readonly args: C;
  /** The tensor backend the run computes on, once the agents are loaded. */
  backend: BackendInfo | undefined;
  protected readonly trainerName: string;
  protected readonly configName: string;
  protected readonly task: TaskSetup;
  protected readonly log: (line: string) => void;
  /** Where the agents generate and train (parallel_training). */
  protected readonly execution: AgentExecution;
  protected readonly learner: Learner;
  /** The train and eval items, loaded from their sources before the run starts. */
  protected readonly datasets: RunDatasets;
  /** One per agent, from the first training run on; they persist across rounds. */
  protected optimizers: AdamW[] = [];
  private agentsPromise: Promise<ResolvedAgent[]> | undefined;
  private resolved: ResolvedAgent[] | undefined;
  private promptsRendered: Promise<void> | undefined;
  private noRewardLogged = false;
  /** While the run starts: aborted by a first SIGINT/SIGTERM (stoppableStart). */
  private startSignal: AbortSignal | undefined;

  protected constructor(
    protected readonly options: TrainerOptions,
    names: TrainerNames,
    args: C,
    learner: (parts: LearnerParts) => Learner,
  ) {
    this.args = args;
    this.trainerName = names.trainerName;
    this.configName = names.configName;
    const people = "preference_labeler" in args && args.preference_labeler === "human";
    if (typeof options.rewardFunc !== "function" && !(people && options.rewardFunc === undefined))
      throw new TypeError(
        `rewardFunc must be a function (completions, context) => number[]${"preference_labeler" in args ? ' (it may be left out only with preference_labeler="human")' : ""}`,
      );
    if (people && options.rewardFunc === undefined && "human_fallback" in args && args.human_fallback === "reward")
      throw new ConfigError(this.configName, [
        'human_fallback: "reward" labels undecided comparisons with reward_func, and none was given; pass rewardFunc or use "drop"',
      ]);
    this.task = taskSetup({
      collaborationMode: args.collaboration_mode,
      numAgents: args.num_agents,
      formatters: options.formatters,
      rewardFunc: options.rewardFunc,
      adapter: options.centralizedAdapter,
    });
    const verbose = args.verbose;
    this.log = options.log ?? ((line) => verbose && process.stderr.write(`${line}\n`));
    checkDdp(this.configName, this.trainerName, args);
    this.execution = agentExecution(args.parallel_training, this.task.actors, this.log, { timeoutSeconds: args.ddp_timeout, agentDevices: args.agent_devices });
    this.datasets = new RunDatasets(options, this.log);
    this.learner = learner({ task: this.task, execution: this.execution, log: this.log, trainItems: () => this.datasets.train });
  }

  /** The agents, loaded on first use (after the backend is chosen). */
  async agents(): Promise<ResolvedAgent[]> {
    this.agentsPromise ??= (async () => {
      await this.datasets.load();
      const { compute, agents } = await loadTrainerAgents({
        trainerName: this.trainerName,
        configName: this.configName,
        args: this.args,
        task: this.task,
        sources: { ...this.options, trainDataset: this.datasets.train },
        log: this.log,
        promptTokens: async (agents) => {
          await this.renderPrompts(agents);
          return runPromptTokens(this.task, this.datasets.train, this.args);
        },
      });
      this.backend = compute.backend;
      this.resolved = agents;
      this.learner.checkAgents(agents);
      return agents;
    })();
    return this.agentsPromise;
  }

  /** Samples the current policies on the eval set and scores them with the task reward (never a learned reward model). */
  async evaluate(rng: RngStream = new RngStreams(this.args.seed).get(STREAMS.eval)): Promise<EvalResult | undefined> {
    const items = this.evalItems();
    const rewardFunc = this.task.rewardFunc;
    if (items.length === 0 || rewardFunc === undefined) return undefined;
    const agents = await this.agents();
    await this.renderPrompts(agents);
    return evaluatePolicies({
      policies: this.task.policies(agents),
      items,
      formatters: this.task.formatters,
      rewardFunc,
      rewardProcessor: this.options.rewardProcessor,
      settings: samplingSettings(this.args),
      rng,
      concurrency: this.args.reward_concurrency,
      rewardTimeoutS: this.args.reward_timeout_s,
      onWarning: (m) => this.log(`pbrl: eval: ${m}`),
    });
  }

  /** The reward model the learning step fitted (MARLHF: the latest, kept until the next replaces it; MADPO fits none), until dispose. */
  get fittedRewardModel(): JointRewardModel | undefined {
    return this.learner.rewardModel;
  }

  /** The frozen reference models of the KL (MARLHF with reference_kl_enabled: one per actor on reference_devices), once learning has started; until dispose. */
  get frozenReferences(): readonly CausalLM[] | undefined {
    return this.learner.references;
  }

  /** Writes every agent to `<dir>/agent_<i>` as a Hugging Face checkpoint folder. */
  async saveModel(dir: string): Promise<void> {
    await saveAgents(dir, await this.agents(), this.args.save_dtype);
  }

  /**
   * The learner's training on `pairs`. What generation kept for reuse (libtorch's block cache and
   * heap) is given back before it and what training kept after it, so that neither phase's
   * leftovers sit under the other's peak (releaseCachedMemory).
   */
  protected async learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    releaseCachedMemory();
    try {
      await this.learner.learn(pairs, ctx);
    } finally {
      releaseCachedMemory();
    }
  }

  /** The task reward, which every labelling but people's needs (the constructor made sure it is there). */
  protected taskReward(): RewardFunc {
    const r = this.task.rewardFunc;
    if (r === undefined) throw new Error("internal: no reward_func, though the run labels with it");
    return r;
  }

  /** Frees the agents' weights, their optimizer state and what the learner holds. */
  dispose(): void {
    void this.execution.close();
    this.learner.dispose();
    for (const o of this.optimizers) o.dispose();
    disposeAgents(this.resolved ?? []);
  }

  /**
   * Everything read and checked before output_dir is touched, so a run that cannot start leaves
   * it as it was: the dataset, the hub token, the folder's plan, the agents, and whether the run
   * fits the backend's memory and the models' context.
   */
  protected async checkBeforeRun(planDir: () => RunDirPlan): Promise<{ agents: ResolvedAgent[]; plan: RunDirPlan }> {
    const a = this.args;
    await this.datasets.load();
    checkDataset(this.configName, this.datasets.train);
    checkPushReady(this.configName, a);
    const plan = planDir();
    return stoppableStart(this.options.handleSignals !== false, this.log, async (signal) => {
      this.startSignal = signal;
      try {
        const agents = await this.agents();
        await this.renderPrompts(agents);
        const train = this.datasets.train;
        const memory = checkRunMemory(this.trainerName, a, agents, runPromptTokens(this.task, train, a), train.length);
        if (a.verbose) this.log(`pbrl: ${describeRunMemory(memory)}`);
        // Eval prompts too: an evaluation must not find one too long after hours of training.
        checkContextRoom(agents, runPromptTokens(this.task, [...train, ...this.evalItems()], a), a);
        return { agents, plan };
      } finally {
        this.startSignal = undefined;
      }
    });
  }

  /** The eval items evaluations use (the first eval_num_samples). */
  private evalItems(): readonly TaskItem[] {
    return (this.datasets.eval ?? []).slice(0, this.args.eval_num_samples);
  }

  /**
   * Formats, renders and encodes every train and eval item's prompt once (prompt-rendering.ts),
   * into the task's PromptBook; later calls wait for the first. Runs before output_dir is touched.
   */
  private renderPrompts(agents: readonly ResolvedAgent[]): Promise<void> {
    this.promptsRendered ??= (async () => {
      const a = this.args;
      const datasets: { name: DatasetName; items: readonly TaskItem[] }[] = [
        { name: "train_dataset", items: this.datasets.train },
        { name: "eval_dataset", items: this.evalItems() },
      ];
      const counts = datasets.filter((d) => d.items.length > 0).map((d) => `${d.items.length} ${d.name} items`);
      if (a.verbose) this.log(`pbrl: rendering the prompts of ${counts.join(" and ")}`);
      await renderRunPrompts({
        task: this.task,
        tokenizers: agents.map((ag) => ag.tokenizer),
        limits: agents.map((ag) => ({
          maxPromptLength: a.max_prompt_length,
          maxNewTokens: a.max_new_tokens,
          maxPositionEmbeddings: ag.model.config.maxPositionEmbeddings,
        })),
        datasets,
        timeoutS: a.reward_timeout_s,
        signal: this.startSignal,
      });
    })().catch((err: unknown) => {
      // A later start renders what is missing (the items done stay done).
      this.promptsRendered = undefined;
      throw err;
    });
    return this.promptsRendered;
  }

  /** How long phases show progress: through the `log` option when one is given, else on stderr (ProgressBar.enabledFor). */
  protected progressMode(): ProgressMode {
    if (this.options.log === undefined) return ProgressBar.enabledFor(this.args.verbose);
    return this.args.verbose ? { lines: this.options.log } : "off";
  }

  /** An AdamW per agent at agent_learning_rate; the trainer frees them on dispose. */
  protected startOptimizers(agents: readonly ResolvedAgent[]): AdamW[] {
    this.optimizers = agents.map((ag) => new AdamW(ag.model.params, { lr: this.args.agent_learning_rate }));
    return this.optimizers;
  }

  /** Evaluates (see {@link evaluate}) and writes the eval metrics line at `step` (default: the current env_step). */
  protected async evaluateAndRecord(
    metrics: MetricsLog,
    counters: TrainingCounters,
    rng: RngStream,
    step = counters.envStep,
    callbacks?: RunCallbacks,
  ): Promise<EvalResult | undefined> {
    const n = Math.min(this.args.eval_num_samples, (this.datasets.eval ?? []).length);
    if (n === 0) return undefined;
    if (this.task.rewardFunc === undefined) {
      if (!this.noRewardLogged)
        this.log("pbrl: no reward_func: evaluation is skipped (people label the rounds; give reward_func to see the team's eval curve)");
      this.noRewardLogged = true;
      return undefined;
    }
    this.log(`pbrl: evaluating on ${n} eval items after ${counters.updates} updates`);
    const r = (await this.evaluate(rng))!;
    metrics.write({
      kind: "eval",
      step,
      update: counters.updates,
      "eval/turn_1/reward_mean": r["eval/turn_1/reward_mean"],
      "eval/turn_1/expected_return": r["eval/turn_1/expected_return"],
    });
    this.log(`pbrl: eval after ${counters.updates} updates: reward ${r["eval/turn_1/reward_mean"].toFixed(4)}`);
    await callbacks?.emit("onEvaluate", r);
    return r;
  }

  /** The end of a run: the final evaluation (unless eval_interval=0), the trained agents saved under output_dir/agents, and pushed when asked. */
  protected async finishRun(o: {
    metrics: MetricsLog;
    counters: TrainingCounters;
    evalRng: RngStream;
    record: Readonly<Record<string, unknown>>;
    done: string;
    callbacks: RunCallbacks;
  }): Promise<EvalResult | undefined> {
    const a = this.args;
    const evalAfter = a.eval_interval > 0 ? await this.evaluateAndRecord(o.metrics, o.counters, o.evalRng, undefined, o.callbacks) : undefined;
    const dir = path.join(a.output_dir, "agents");
    await this.saveModel(dir);
    this.log(`pbrl: ${o.done}; agents saved under ${dir}`);
    await o.callbacks.emit("onSave", dir);
    if (a.push_to_hub)
      await pushAgents({
        agentsDir: dir,
        repo: a.hub_model_id!,
        private: a.hub_private_repo,
        trainer: this.trainerName,
        record: o.record,
        evalAfter,
        baseModel: hubBaseModel(this.options.agentModel),
        log: this.log,
      });
    return evalAfter;
  }
}

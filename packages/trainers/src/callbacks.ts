/**
 * Callbacks in TRL's shape: each event receives the run's state and a control object. Setting
 * `control.shouldTrainingStop = true` ends an iterative run cleanly after the round in progress,
 * once its checkpoint is written (resume it with resume_from_checkpoint=true), and a base run
 * after its collection phase, before any update.
 */
import type { EvalResult } from "./evaluation.js";
import type { MetricsRecord } from "./metrics-log.js";
import type { RoundSummary } from "./round-record.js";
import type { TrainingCounters } from "./training-counters.js";

/** Where the run stands when a callback is called (a snapshot: changing it changes nothing). */
export interface TrainerState {
  /** The trainer's name as config.json records it: madpo, madpo_iter, marlhf or marlhf_iter. */
  readonly trainer: string;
  readonly outputDir: string;
  /** The round in progress, or the last one completed (0 before the first; base trainers stay at 0). */
  readonly round: number;
  /** num_iterations (base trainers: 1). */
  readonly numRounds: number;
  /** Optimizer updates so far. */
  readonly updates: number;
  /** The environment-step counter the metrics are logged at. */
  readonly envStep: number;
}

/** What a callback may ask of the run. */
export interface TrainerControl {
  /** Stop after the current round (iterative, with its checkpoint) or after collection (base). */
  shouldTrainingStop: boolean;
}

type Event<Extra extends unknown[] = []> = (state: TrainerState, control: TrainerControl, ...extra: Extra) => void | Promise<void>;

/** Any subset of the events; a callback that throws fails the run, as before callbacks existed. */
export interface TrainerCallback {
  /** Once output_dir is open and a resumed run is restored, before the first round (or collection). */
  onTrainBegin?: Event;
  /** As a round's collection starts. */
  onRoundBegin?: Event;
  /** Once a round is complete and its checkpoint written. */
  onRoundEnd?: Event<[summary: RoundSummary]>;
  /** Every metrics record, as metrics.jsonl gets it (called synchronously: a returned Promise is not awaited). */
  onLog?: (state: TrainerState, control: TrainerControl, record: Readonly<MetricsRecord>) => void;
  /** After a round's checkpoint, and after the trained agents are saved at the end (`dir`: where). */
  onSave?: Event<[dir: string]>;
  /** After every evaluation with the task reward. */
  onEvaluate?: Event<[result: EvalResult]>;
  /** At the end of the run, also when it stopped early. */
  onTrainEnd?: Event;
}

type AwaitedEvent = Exclude<keyof TrainerCallback, "onLog">;
type ExtraOf<E extends AwaitedEvent> = NonNullable<TrainerCallback[E]> extends Event<infer X> ? X : never;

/** One run's callbacks, with the state they see and the control they share. */
export class RunCallbacks {
  readonly control: TrainerControl = { shouldTrainingStop: false };
  round = 0;

  constructor(
    private readonly callbacks: readonly TrainerCallback[],
    private readonly run: { trainer: string; outputDir: string; numRounds: number },
    private readonly counters: Readonly<TrainingCounters>,
  ) {}

  get state(): TrainerState {
    return { ...this.run, round: this.round, updates: this.counters.updates, envStep: this.counters.envStep };
  }

  async emit<E extends AwaitedEvent>(event: E, ...extra: ExtraOf<E>): Promise<void> {
    for (const cb of this.callbacks) {
      const fn = cb[event] as Event<ExtraOf<E>> | undefined;
      if (fn !== undefined) await fn.call(cb, this.state, this.control, ...extra);
    }
  }

  /** The metrics listener that calls every onLog. */
  readonly listener = (record: Readonly<MetricsRecord>): void => {
    for (const cb of this.callbacks) cb.onLog?.(this.state, this.control, record);
  };
}

import type { ProgressMode } from "./progress.js";
import type { AdamW, RngStreams } from "@pbrl/core-tensor";
import type { ResolvedAgent } from "./agents.js";
import type { TrainingCounters } from "./madpo-epochs.js";
import type { MetricsLog } from "./metrics-log.js";

/** What a trainer's learning step works with, once its pairs are chosen. */
export interface LearnContext {
  /** Prefix of progress labels and error locations, e.g. "round 2/6, " (empty for the base trainers). */
  label: string;
  agents: readonly ResolvedAgent[];
  /** One per agent; they persist across rounds. */
  optimizers: readonly AdamW[];
  counters: TrainingCounters;
  streams: RngStreams;
  metrics: MetricsLog;
  /** Evaluates the current policies with the task reward (the first result is the run's evalBefore). */
  evaluate: () => Promise<void>;
  progress: ProgressMode;
  log: (line: string) => void;
  /** Extra fields of every train metrics line (the round, in iterative training). */
  extra: Record<string, number>;
}

/**
 * The learning step a trainer drives. A trainer collects preference pairs (once, or every round)
 * and hands the chosen ones to its learner: MADPO trains the agents on them directly; MARLHF fits
 * a reward model to them and runs RL against it. The base and the iterative trainers drive either
 * learner the same way, so what differs between MADPO and MARLHF lives here and nowhere else.
 */
import type { AdamW, RngStreams } from "@pbrl/core-tensor";
import type { CausalLM } from "@pbrl/models";
import type { JointRewardModel } from "@pbrl/reward-model";
import type { CollectedPair, PreferenceScorer, RewardFunc, RewardProcessor } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";
import type { MetricsLog } from "./metrics-log.js";
import type { ProgressMode } from "./progress.js";
import type { TrainingCounters } from "./training-counters.js";

/** What a learning step works with, once its pairs are chosen. */
export interface LearnContext {
  /** Prefix of progress labels and error locations, e.g. "round 2/6, " (empty for the base trainers). */
  label: string;
  agents: readonly ResolvedAgent[];
  /** One per agent; they persist across rounds. */
  optimizers: readonly AdamW[];
  counters: TrainingCounters;
  streams: RngStreams;
  metrics: MetricsLog;
  /**
   * Evaluates the current policies with the task reward (the first result is the run's
   * evalBefore); its metrics line is written at `step` (default: the current env_step).
   */
  evaluate: (step?: number) => Promise<void>;
  progress: ProgressMode;
  log: (line: string) => void;
  /** Extra fields of every train metrics line (the round, in iterative training). */
  extra: Record<string, number>;
  /** The pairs this collection produced (the training pairs may include earlier rounds'). */
  newPairs: readonly CollectedPair[];
  /** What labelled them. */
  scorer: PreferenceScorer;
  /** Folder of agent_<i> checkpoints with the weights before training began; undefined: the agents hold them now (training has not started). */
  initialPoliciesDir: string | undefined;
}

/** The part of a learning context that stays the same for a whole run. */
export type LearnSession = Pick<LearnContext, "agents" | "optimizers" | "counters" | "streams" | "metrics" | "evaluate" | "progress" | "log">;

/** A round's learning step: the shared context plus the round number. */
export interface RoundContext extends LearnContext {
  round: number;
}

/** Labels a round's comparisons: a reward function and processor, and its name for the round file. */
export interface PreferenceScoring {
  scorer: PreferenceScorer;
  rewardFunc: RewardFunc;
  rewardProcessor: RewardProcessor | undefined;
}

export interface Learner {
  /** The reward model the last learning step fitted, when the learner fits one (MARLHF). */
  readonly rewardModel?: JointRewardModel | undefined;
  /** The frozen reference policies of a KL penalty, when the learner keeps them (MARLHF with reference_kl_enabled). */
  readonly references?: readonly CausalLM[] | undefined;
  /** Checks, once the agents are loaded and before any work, what depends on their sources (MARLHF: the reward model's and critics'). */
  checkAgents(agents: readonly ResolvedAgent[]): void;
  /** What labels a round's comparisons; undefined: the task reward. */
  preferenceScoring(round: number): PreferenceScoring | undefined;
  /** Trains the agents on `pairs`. */
  learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void>;
  /** Writes what learning keeps beyond the agents (MARLHF: its reward model) into `dir`: a checkpoint being assembled, or the run's folder. */
  saveState(dir: string): Promise<void>;
  /** Restores what {@link saveState} wrote into a checkpoint. */
  restoreState(dir: string, agents: readonly ResolvedAgent[]): Promise<void>;
  dispose(): void;
}

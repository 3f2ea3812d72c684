/**
 * What readRun finds in a run folder, in a form renderReport turns into HTML without touching the
 * disk. Every part may be missing: a run that is still going, was stopped mid-round or lost a
 * file still gets a report, and `problems` says what could not be read.
 */
import type { LabelRecord } from "@pbrl/human-labels";
import type { RewardDistribution } from "./read/distribution-file.js";

export const TRAINERS = ["madpo", "madpo_iter", "marlhf", "marlhf_iter"] as const;
export type TrainerName = (typeof TRAINERS)[number];

export const METRIC_KINDS = ["collect", "train", "eval", "round", "reward"] as const;
export type MetricKind = (typeof METRIC_KINDS)[number];

/** A value in a metrics line; a NaN the run logged reads back as null. */
export type MetricValue = number | string | boolean | null;

/** One line of metrics.jsonl. */
export interface MetricsRecord {
  readonly kind: string;
  readonly step: number;
  readonly [key: string]: MetricValue;
}

export interface MetricsData {
  /** Every record in file order. */
  records: MetricsRecord[];
  /** The records of each kind the trainers write, in file order. */
  byKind: Record<MetricKind, MetricsRecord[]>;
  /** Records of any other kind (a newer trainer's). */
  other: MetricsRecord[];
  /** Lines that could not be read, 1-based, with why. */
  skipped: { line: number; reason: string }[];
  /** The file ends in a line the run had not finished writing (running, or killed mid-write). */
  partialLastLine: boolean;
}

/** A preference pair shown in the report: the text, without token ids. */
export interface PairSample {
  /** Position in its file (0-based). */
  index: number;
  prompts: string[];
  winnerCompletions: string[];
  loserCompletions: string[];
  winnerReward: number;
  loserReward: number;
  targetRawReward: number | null;
  comparatorRawReward: number | null;
  /** Which side's joint response won, when the raw rewards say (iterative training). */
  winnerSide: "target" | "comparator" | null;
}

/** One round file (`preference_replay/iteration_NNNN.json`) or the base trainers' pairs file. */
export interface PairSet {
  /** Round number; null for preference_pairs.json. */
  iteration: number | null;
  file: string;
  /** Pairs the file holds (valid ones). */
  numPairs: number;
  /** Which reward labelled the pairs ("task" or "reward_model"), when recorded. */
  scorer: string | null;
  winnerRewards: number[];
  loserRewards: number[];
  samples: PairSample[];
  /** Pairs per pair-level `scorer` ("human", or "task" for the fallback reward), for pairs that record one. */
  pairScorers: Record<string, number>;
  /** What was wrong with the file, if anything (the pairs that were readable are still used). */
  problems: string[];
}

/** One round's label file (`human_labels/round_NNNN.jsonl`) of a run labelled by people. */
export interface HumanLabelFile {
  round: number;
  file: string;
  /** The records in file order; none when the file could not be read. */
  records: LabelRecord[];
  /** Why the file could not be read (for a malformed line: the file and line), else null. */
  error: string | null;
}

/** The label files of a run trained with `preference_labeler: "human"`. */
export interface HumanLabelsData {
  dir: string;
  /** In round order. */
  files: HumanLabelFile[];
}

export interface LockInfo {
  pid: number | null;
  host: string | null;
  started: string | null;
  /** Whether that process is alive: null when it runs on another host (cannot be checked from here). */
  alive: boolean | null;
}

export type RunState = "finished" | "running" | "stopped" | "not started";

export interface RunStatus {
  state: RunState;
  /** One sentence: "finished: 3 of 3 rounds, agents saved", "stopped after round 2 of 5", … */
  summary: string;
  /** Rounds with a checkpoint (iterative trainers). */
  completedRounds: number | null;
  /** num_iterations from config.json. */
  numIterations: number | null;
  /** A round that has metrics or files but no checkpoint yet. */
  unfinishedRound: number | null;
}

export interface RunData {
  /** The run folder as given. */
  dir: string;
  /** From config.json, or guessed from the files when it is missing (then `trainerInferred`). */
  trainer: TrainerName | null;
  trainerInferred: boolean;
  /** config.json, or null when it is missing or unreadable. */
  config: Record<string, unknown> | null;
  metrics: MetricsData;
  /** Round files in round order (iterative trainers). */
  rounds: PairSet[];
  /** preference_pairs.json (base trainers). */
  pairs: PairSet | null;
  /** human_labels/: null when the folder is missing or holds no label file. */
  humanLabels: HumanLabelsData | null;
  /** Reward distribution files in round order. */
  distributions: RewardDistribution[];
  /** checkpoints/latest.json. */
  checkpoint: { round: number; dir: string } | null;
  /** agents/agent_0 exists: the final agents were saved. */
  agentsSaved: boolean;
  lock: LockInfo | null;
  status: RunStatus;
  /** Which run files were found, by name, for the overview. */
  files: { name: string; found: boolean; detail: string }[];
  /** Everything that could not be read, in words. */
  problems: string[];
}

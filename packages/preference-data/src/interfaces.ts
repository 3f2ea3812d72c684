/**
 * The contracts that let a comparator or a replay buffer be swapped: the iterative trainers
 * take any object implementing them. They live here, next to the pair types, so that
 * implementations depend only on this package.
 */
import type { AgentPairTokens, CollectedPair } from "./collect.js";
import type { PairRecord, PreferenceScorer } from "./pair-record.js";
import type { TaskItem } from "./types.js";

/** One side's candidates for one item. */
export interface CandidateSet {
  /** texts[agent][candidate] */
  texts: string[][];
  /**
   * Token ids in the agents' own tokenizers, when known (a local comparator sharing them):
   * tokens[agent][candidate]. Otherwise the texts are tokenized with each agent's tokenizer.
   */
  tokens?: number[][][];
  /** Whether a candidate ended with a stop token (then EOS is appended when tokenizing its text): stopped[agent][candidate]. */
  stopped?: boolean[][];
  /**
   * Per candidate index: false when the candidate is invalid (a joint completion that could not
   * be split into role responses). Invalid candidates are counted and never form pairs.
   */
  valid: boolean[];
}

/** The other side of every comparison in iterative training. */
export interface Comparator {
  /** A custom comparator's name, for the run's log and config.json (e.g. "gpt-judge"). */
  readonly name?: string;
  /** A short description for logs, e.g. "history (k=2)". */
  readonly description: string;
  /** Prepares round `round` (1-based) before collection, e.g. loads a checkpoint once. */
  beginRound(round: number): Promise<void>;
  /** `n` candidates per item; `prompts[item][agent]` are the agents' own formatted prompts. */
  sample(items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]>;
  /** Releases what beginRound prepared. */
  endRound(): Promise<void>;
  /** Frees everything; the comparator is not used afterwards. */
  dispose(): void;
}

/** Builds one joint prompt from every role's prompt, and splits a joint completion back. */
export interface CentralizedAdapter {
  buildPrompt(item: TaskItem, agentPrompts: readonly string[]): string;
  /** One response per role; throws CentralizedParseError when the completion has no role sections. */
  parseCompletion(completion: string, item: TaskItem, numAgents: number): string[];
}

export class CentralizedParseError extends Error {
  override name = "CentralizedParseError";
}

/** One non-empty round dataset known to the replay buffer. */
export interface ReplayIndexEntry {
  /** 1-based round number (named as the round files' and CoMLRL's replay index: a stored format, like num_pairs). */
  iteration: number;
  /** The round file, `iteration_NNNN.json` under the replay directory. */
  file: string;
  num_pairs: number;
  /** SHA-256 of the file's bytes when it was written: a file rewritten since (even with as many pairs) is caught. */
  sha256?: string;
}

/** What a checkpoint stores of a replay buffer, to restore it on resume. */
export interface ReplayState {
  entries: ReplayIndexEntry[];
}

/** Re-creates the token ids of a stored pair for training. */
export type PairTokenizer = (record: PairRecord) => AgentPairTokens[];

/** Stores every round's pairs and chooses each round's training pairs. */
export interface ReplayBuffer {
  /** A custom replay buffer's name, for the run's log and config.json. */
  readonly name?: string;
  /** What it replays, in a few words, for the same. */
  readonly description?: string;
  /** Writes round `round`'s file (atomically, also when empty), recording `scorer` when given, and indexes it if non-empty. */
  addRound(round: number, pairs: readonly CollectedPair[], scorer?: PreferenceScorer): Promise<void>;
  /** The training pairs for round `round`, from this round and earlier ones. */
  select(round: number, current: readonly CollectedPair[], tokenize: PairTokenizer): Promise<CollectedPair[]>;
  getState(): ReplayState;
  /** Restores the index saved in a checkpoint, checking each file; a missing or corrupt one is an error naming it. */
  restore(state: ReplayState): Promise<void>;
}

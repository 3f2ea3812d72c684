import * as path from "node:path";
import type { RngStream } from "@pbrl/core-tensor";
import {
  roundFileName,
  writeRoundFile,
  type AgentPairTokens,
  type CollectedPair,
  type PairRecord,
  type PreferenceScorer,
  type PairTokenizer,
  type ReplayBuffer,
  type ReplayIndexEntry,
  type ReplayState,
} from "@pbrl/preference-data";
import { allocateDraws } from "./allocate.js";
import { ReplayError } from "./errors.js";
import { checkBufferOptions, type OnDiskReplayBufferOptions, type ReplayMode } from "./options.js";
import { entryPath, fileSha256, readIndexedRound } from "./round-files.js";
import { sampleIndices } from "./sample-indices.js";
import { defaultSampleSize } from "./sample-size.js";
import { parseReplayState } from "./state.js";
import { lambdaWeights, uniformWeights } from "./weights.js";

/**
 * The replay buffer of the iterative trainers: every round's pairs go to `iteration_NNNN.json`
 * under `dir`; an in-memory index of the non-empty rounds drives selection and is what a
 * checkpoint saves. The directory is never scanned, so an earlier run's files there are not
 * imported; only `restore` brings entries in, after checking their files.
 */
export class OnDiskReplayBuffer implements ReplayBuffer {
  readonly mode: ReplayMode;
  readonly dir: string;
  private readonly k: number;
  private readonly lambda: number;
  private readonly sampleSize: number | null;
  private readonly rng: RngStream;
  private entries: ReplayIndexEntry[] = [];
  /** The newest round added (empty ones included), to keep rounds in order and select honest. */
  private lastRound = 0;

  constructor(options: OnDiskReplayBufferOptions) {
    checkBufferOptions(options);
    this.mode = options.mode;
    this.dir = path.resolve(options.dir);
    this.k = options.k ?? 1;
    this.lambda = options.lambda ?? 1;
    this.sampleSize = options.sampleSize ?? null;
    this.rng = options.rng;
  }

  async addRound(round: number, pairs: readonly CollectedPair[], scorer?: PreferenceScorer): Promise<void> {
    if (!Number.isSafeInteger(round) || round < 1) throw new ReplayError(`addRound: iteration must be an integer ≥ 1, got ${round}`);
    if (round <= this.lastRound) throw new ReplayError(`addRound: round ${round} comes after round ${this.lastRound} was already stored; rounds must increase`);
    const file = roundFileName(round);
    await writeRoundFile(
      path.join(this.dir, file),
      round,
      pairs.map((p) => p.record),
      scorer,
    );
    this.lastRound = round;
    if (pairs.length > 0) this.entries.push({ iteration: round, file, num_pairs: pairs.length, sha256: await fileSha256(path.join(this.dir, file)) });
  }

  async select(round: number, current: readonly CollectedPair[], tokenize: PairTokenizer): Promise<CollectedPair[]> {
    this.checkRoundStored(round, current);
    if (this.mode === "current") return [...current];
    const eligible = this.mode === "nearest_k" ? this.entries.slice(-this.k) : this.entries;
    const total = this.sampleSize ?? defaultSampleSize(current.length, this.entries);
    // Stryker disable next-line ConditionalExpression,LogicalOperator: no draws or no datasets select nothing either way, and draw nothing from the stream
    if (total === 0 || eligible.length === 0) return [];
    // Stryker disable next-line ConditionalExpression: lambda defaults to 1, whose weights are the uniform ones
    const weights = this.mode === "lambda_decay" ? lambdaWeights(eligible.length, this.lambda) : uniformWeights(eligible.length);
    const counts = allocateDraws(weights, total, this.rng);
    // Each drawn file is read once per call; files are immutable after writing, but holding every
    // round in memory across rounds would grow with the history, so nothing is cached between calls.
    const rounds = await Promise.all(eligible.map((e, d) => (counts[d]! > 0 ? readIndexedRound(this.dir, e) : null)));
    const picked: CollectedPair[] = [];
    eligible.forEach((entry, d) => {
      const stored = rounds[d];
      if (!stored) return;
      // A pair drawn again (more draws than pairs) is tokenized once; the copies get their own
      // arrays so that a consumer editing one pair's tokens cannot change another's.
      const tokensOf = new Map<number, AgentPairTokens[]>();
      for (const i of sampleIndices(stored.pairs.length, counts[d]!, this.rng)) {
        const record = stored.pairs[i]!;
        const seen = tokensOf.get(i);
        let tokens: AgentPairTokens[];
        if (seen === undefined) {
          tokens = tokenizeReplayed(record, tokenize, `pair ${i} of replay round file ${entryPath(this.dir, entry)}`);
          tokensOf.set(i, tokens);
        } else {
          tokens = seen.map((t) => ({ promptIds: [...t.promptIds], winnerIds: [...t.winnerIds], loserIds: [...t.loserIds] }));
        }
        picked.push({ record, tokens, itemIndex: -1 });
      }
    });
    return this.rng.shuffle(picked);
  }

  getState(): ReplayState {
    return { entries: this.entries.map((e) => ({ ...e })) };
  }

  async restore(state: ReplayState): Promise<void> {
    const entries = parseReplayState(state);
    const results = await Promise.allSettled(entries.map((e) => readIndexedRound(this.dir, e)));
    const problems = results.flatMap((r) => (r.status === "rejected" ? [(r.reason as Error).message] : []));
    if (problems.length > 0) {
      throw new ReplayError(
        `cannot restore the replay index from ${this.dir}: ${problems.join("; ")}. ` +
          `Resuming needs the round files exactly as the checkpoint indexed them: set preference_replay_dir to the folder the run wrote them to, put the original files back, or resume from an earlier checkpoint`,
      );
    }
    this.entries = entries;
    this.lastRound = entries.at(-1)?.iteration ?? 0;
  }

  /** Selection follows addRound for the same round; anything else is a trainer bug worth stopping on. */
  private checkRoundStored(round: number, current: readonly CollectedPair[]): void {
    if (round !== this.lastRound) {
      throw new ReplayError(`select: round ${round} was not stored (the newest stored round is ${this.lastRound}); call addRound(${round}, pairs) first`);
    }
    const last = this.entries.at(-1);
    const stored = last?.iteration === round ? last.num_pairs : 0;
    if (stored !== current.length) {
      throw new ReplayError(`select: round ${round} was stored with ${stored} pairs but ${current.length} current pairs were passed`);
    }
  }
}

function tokenizeReplayed(record: PairRecord, tokenize: PairTokenizer, where: string): AgentPairTokens[] {
  let tokens: AgentPairTokens[];
  try {
    tokens = tokenize(record);
  } catch (err) {
    throw new ReplayError(`cannot tokenize ${where}: ${(err as Error).message}`, { cause: err });
  }
  if (tokens.length !== record.prompts.length) {
    throw new ReplayError(`tokenizing ${where} gave ${tokens.length} agent entries but the pair has ${record.prompts.length}`);
  }
  return tokens;
}

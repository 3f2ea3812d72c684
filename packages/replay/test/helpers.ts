import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { AgentPairTokens, CollectedPair, PairRecord } from "@pbrl/preference-data";

export async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), "pbrl-replay-"));
}

/** A two-agent pair whose prompts say where it came from, e.g. "r3 p1 a0". */
export function makePair(round: number, index: number, tag = "r"): CollectedPair {
  const id = `${tag}${round} p${index}`;
  const record: PairRecord = {
    prompts: [`${id} a0`, `${id} a1`],
    winner_completions: [`win ${id} a0`, `win ${id} a1`],
    loser_completions: [`lose ${id} a0`, `lose ${id} a1`],
    winner_reward: 1,
    loser_reward: 0,
    candidate_reward_mean: 0.5,
  };
  // In-memory tokens that no tokenizer would produce, so a test can tell them from re-tokenized ones.
  const tokens = [0, 1].map(() => ({ promptIds: [-1], winnerIds: [-2], loserIds: [-3] }));
  return { record, tokens, itemIndex: index };
}

export function makeRound(round: number, count: number, tag = "r"): CollectedPair[] {
  return Array.from({ length: count }, (_, i) => makePair(round, i, tag));
}

/** A stand-in tokenizer: one id per character code. */
export function charTokenize(record: PairRecord): AgentPairTokens[] {
  const ids = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));
  return record.prompts.map((p, a) => ({ promptIds: ids(p), winnerIds: ids(record.winner_completions[a]!), loserIds: ids(record.loser_completions[a]!) }));
}

/** The round a pair made by makePair came from. */
export function roundOf(pair: CollectedPair): number {
  return Number(/^[a-z]+(\d+) /.exec(pair.record.prompts[0]!)![1]);
}

/** The pair's "rR pI" label. */
export function labelOf(pair: CollectedPair): string {
  return pair.record.prompts[0]!.replace(/ a0$/, "");
}

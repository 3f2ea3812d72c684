/**
 * Round files and preference_pairs.json, read for a report: leniently. The trainers write them
 * atomically, but a report must still say something useful about a file that was edited,
 * truncated or written by another version, so each pair is checked on its own against
 * preference-data's PairRecordSchema and the readable ones are kept.
 */
import { promises as fs } from "node:fs";
import { PairRecordSchema, type PairRecord } from "@pbrl/preference-data";
import type { PairSample, PairSet } from "../run-data.js";

/** Which pairs of n to show: k evenly spaced ones, the same every time. */
export function sampleIndices(n: number, k: number): number[] {
  if (k <= 0 || n <= 0) return [];
  if (k >= n) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: k }, (_, i) => Math.floor((i * n) / k));
}

function sampleOf(index: number, r: PairRecord): PairSample {
  const target = r.target_raw_reward ?? null;
  const comparator = r.comparator_raw_reward ?? null;
  const winnerRaw = r.raw_rewards?.[0];
  let winnerSide: PairSample["winnerSide"] = null;
  if (winnerRaw !== undefined && target !== null && comparator !== null && target !== comparator) {
    winnerSide = winnerRaw === target ? "target" : winnerRaw === comparator ? "comparator" : null;
  }
  return {
    index,
    prompts: [...r.prompts],
    winnerCompletions: [...r.winner_completions],
    loserCompletions: [...r.loser_completions],
    winnerReward: r.winner_reward,
    loserReward: r.loser_reward,
    targetRawReward: target,
    comparatorRawReward: comparator,
    winnerSide,
  };
}

/** A human-labelled round mixes pairs people decided with pairs the fallback reward did; each pair says which. */
function pairScorers(pairs: readonly PairRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const p of pairs) if (typeof p["scorer"] === "string") counts[p["scorer"]] = (counts[p["scorer"]] ?? 0) + 1;
  return counts;
}

/** A pair set from a file's parsed JSON; `iteration` null for preference_pairs.json. */
export function pairSetFromJson(json: unknown, file: string, iteration: number | null, samplesPerSet: number): PairSet {
  const set: PairSet = { iteration, file, numPairs: 0, scorer: null, winnerRewards: [], loserRewards: [], samples: [], pairScorers: {}, problems: [] };
  if (json === null || typeof json !== "object" || !Array.isArray((json as { pairs?: unknown }).pairs)) {
    set.problems.push(`${file} has no "pairs" list`);
    return set;
  }
  const body = json as { pairs: unknown[]; num_pairs?: unknown; iteration?: unknown; scorer?: unknown };
  if (typeof body.scorer === "string") set.scorer = body.scorer;
  if (iteration !== null && body.iteration !== iteration)
    set.problems.push(`${file} says iteration ${JSON.stringify(body.iteration)}, its name says ${iteration}`);
  const valid: PairRecord[] = [];
  let invalid = 0;
  for (const p of body.pairs) {
    const parsed = PairRecordSchema.safeParse(p);
    if (parsed.success) valid.push(parsed.data);
    else invalid += 1;
  }
  if (invalid > 0) set.problems.push(`${file}: ${invalid} of ${body.pairs.length} pairs do not match the pair record schema and are left out`);
  if (typeof body.num_pairs === "number" && body.num_pairs !== body.pairs.length)
    set.problems.push(`${file} says num_pairs ${body.num_pairs} but holds ${body.pairs.length} pairs`);
  set.numPairs = valid.length;
  set.winnerRewards = valid.map((r) => r.winner_reward);
  set.loserRewards = valid.map((r) => r.loser_reward);
  set.samples = sampleIndices(valid.length, samplesPerSet).map((i) => sampleOf(i, valid[i]!));
  set.pairScorers = pairScorers(valid);
  return set;
}

function unreadablePairSet(file: string, iteration: number | null, problem: string): PairSet {
  return { iteration, file, numPairs: 0, scorer: null, winnerRewards: [], loserRewards: [], samples: [], pairScorers: {}, problems: [problem] };
}

/** Reads one pairs file; a missing or unreadable file gives an empty set with the reason. */
export async function readPairSet(file: string, iteration: number | null, samplesPerSet: number): Promise<PairSet> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    return unreadablePairSet(file, iteration, `cannot read ${file}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return unreadablePairSet(file, iteration, `${file} is not valid JSON (truncated or corrupt?): ${(err as Error).message}`);
  }
  return pairSetFromJson(json, file, iteration, samplesPerSet);
}

/**
 * The built-in cooperative task of `pbrl demo`: two agents see the same short text; agent 0
 * (the summarizer) answers `Text: {text}\nSummary:` with a few words of it, agent 1 (the
 * expander) answers `Text: {text}\nExpansion:` with a longer version that stays faithful.
 *
 * Joint reward of candidate j, from S = completions[0][j], E = completions[1][j] (each cut at
 * its first newline: generation may run on) and the item's text T:
 *
 *   words(x)     lowercase runs of [a-z0-9] in x
 *   content(x)   words(x) without STOPWORDS (repetitions kept)
 *   faith(x)     |{w ∈ content(x) : w ∈ words(T)}| / |content(x)|            (0 if content(x) is empty)
 *   fS, fE       faith(S), faith(E)
 *   cov          |set(content(E)) ∩ set(content(T))| / |set(content(T))|    (0 if T has none)
 *   brev         brevity(|words(S)|, |words(T)|), brevity(n, m) = 0 if n = 0, else
 *                min(1, n / 3, max(0, 2 − 2n/m)): full credit for 3 ≤ n ≤ m/2 words, 0 for a copy
 *   ratio        min(1, |words(E)| / (3 · |words(S)|))                         (0 if S or E is empty)
 *
 *   R = 0.1·fS + 0.1·fE + 0.2·cov + 0.3·fS·brev + 0.3·fS·fE·ratio   ∈ [0, 1]
 *
 * Brevity only counts as far as the summary is on-topic, and the length ratio as far as both
 * are, so off-topic or empty answers score 0 and neither agent alone gets above 0.4: a faithful
 * short summary without an expansion scores 0.1 + 0.3 = 0.4, a faithful covering expansion
 * without a summary 0.1 + 0.2 = 0.3. scripts/demo/reward.py is the Python port (same numbers).
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** A task item (a type alias, so it is assignable to a `Record<string, unknown>` task row). */
export type SummaryExpansionItem = { id: string; text: string };

/** Any task row; the task reads its string `text`. */
type Row = Readonly<Record<string, unknown>>;

function textOf(item: Row): string {
  const text = item["text"];
  if (typeof text !== "string") throw new TypeError("summary/expansion task: the task item has no string `text`");
  return text;
}

export const SUMMARY_EXPANSION_FORMATTERS: [(item: Row) => string, (item: Row) => string] = [
  (item) => `Text: ${textOf(item)}\nSummary:`,
  (item) => `Text: ${textOf(item)}\nExpansion:`,
];

export const SUMMARY_EXPANSION_REWARD_RANGE: [number, number] = [0, 1];

/** Weights of the joint reward's terms (they sum to 1). */
export const SUMMARY_EXPANSION_WEIGHTS = { faithSummary: 0.1, faithExpansion: 0.1, coverage: 0.2, brevity: 0.3, ratio: 0.3 } as const;
/** |words(E)| / |words(S)| at and above which the length-ratio term is full. */
export const TARGET_LENGTH_RATIO = 3;
/** Summaries shorter than this many words get partial brevity credit. */
export const MIN_SUMMARY_WORDS = 3;

export const STOPWORDS: ReadonlySet<string> = new Set(
  `a an the and or but of to in on at by for with from into onto near over under before after
  while during his her their its our my your he she it they we i you was were is are be been has
  had have that this these those then than as so very also`.split(/\s+/),
);

/** The part of a completion before its first newline. */
export function firstLine(s: string): string {
  const i = s.indexOf("\n");
  return i < 0 ? s : s.slice(0, i);
}

/** Lowercase runs of [a-z0-9]. */
export function words(s: string): string[] {
  return s.toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

/** words(s) without stopwords, repetitions kept. */
export function contentWords(s: string): string[] {
  return words(s).filter((w) => !STOPWORDS.has(w));
}

/** Fraction of the output's content words that occur in the text; 0 without content words. */
export function faithfulness(output: string, text: string): number {
  const c = contentWords(output);
  if (c.length === 0) return 0;
  const vocab = new Set(words(text));
  return c.filter((w) => vocab.has(w)).length / c.length;
}

/** Fraction of the text's distinct content words that the expansion contains. */
export function coverage(expansion: string, text: string): number {
  const t = new Set(contentWords(text));
  if (t.size === 0) return 0;
  const e = new Set(contentWords(expansion));
  let hit = 0;
  for (const w of t) if (e.has(w)) hit += 1;
  return hit / t.size;
}

/** Credit for an n-word summary of an m-word text: 1 for 3 ≤ n ≤ m/2, ramps to 0 at n = 0 and n = m. */
export function brevity(n: number, m: number): number {
  if (n === 0 || m === 0) return 0;
  return Math.min(1, n / MIN_SUMMARY_WORDS, Math.max(0, 2 - (2 * n) / m));
}

/** min(1, |words(E)| / (3 |words(S)|)); 0 when either is empty. */
export function lengthRatio(summary: string, expansion: string): number {
  const ns = words(summary).length;
  const ne = words(expansion).length;
  if (ns === 0 || ne === 0) return 0;
  return Math.min(1, ne / (TARGET_LENGTH_RATIO * ns));
}

export interface SummaryExpansionComponents {
  faithSummary: number;
  faithExpansion: number;
  coverage: number;
  brevity: number;
  ratio: number;
}

/** The reward's terms for one (summary, expansion) pair, each cut at its first newline. */
export function rewardComponents(summary: string, expansion: string, text: string): SummaryExpansionComponents {
  const s = firstLine(summary);
  const e = firstLine(expansion);
  return {
    faithSummary: faithfulness(s, text),
    faithExpansion: faithfulness(e, text),
    coverage: coverage(e, text),
    brevity: brevity(words(s).length, words(text).length),
    ratio: lengthRatio(s, e),
  };
}

/** R = 0.1·fS + 0.1·fE + 0.2·cov + 0.3·fS·brev + 0.3·fS·fE·ratio (see the top of this file). */
export function jointReward(summary: string, expansion: string, text: string): number {
  const c = rewardComponents(summary, expansion, text);
  const w = SUMMARY_EXPANSION_WEIGHTS;
  const fs = c.faithSummary;
  const fe = c.faithExpansion;
  return w.faithSummary * fs + w.faithExpansion * fe + w.coverage * c.coverage + w.brevity * fs * c.brevity + w.ratio * fs * fe * c.ratio;
}

/** completions[agent][candidate] → one joint reward per candidate index. */
export function summaryExpansionReward(completions: string[][], context: { item: Row }): number[] {
  if (completions.length !== 2) throw new RangeError(`the summary/expansion task has 2 agents, got ${completions.length} completion lists`);
  const [summaries, expansions] = completions as [string[], string[]];
  if (summaries.length !== expansions.length) {
    throw new RangeError(`both agents need the same number of candidates (got ${summaries.length} and ${expansions.length})`);
  }
  const text = textOf(context.item);
  return summaries.map((s, j) => jointReward(s, expansions[j]!, text));
}

/** apps/cli/assets, from src/tasks (vitest) and from dist/tasks (built) alike. */
export const ASSETS_DIR = fileURLToPath(new URL("../../assets/", import.meta.url));

function readItems(file: string): SummaryExpansionItem[] {
  const url = new URL(`../../assets/demo-task/${file}`, import.meta.url);
  const lines = readFileSync(url, "utf8").split("\n");
  const items: SummaryExpansionItem[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    const row = JSON.parse(line) as Record<string, unknown>;
    if (typeof row["id"] !== "string" || typeof row["text"] !== "string")
      throw new Error(`${fileURLToPath(url)}:${i + 1}: an item needs string "id" and "text"`);
    items.push({ id: row["id"], text: row["text"] });
  });
  return items;
}

/** The built-in task split (apps/cli/assets/demo-task/{train,eval}.jsonl). */
export function loadSummaryExpansionTask(): { train: SummaryExpansionItem[]; eval: SummaryExpansionItem[] } {
  return { train: readItems("train.jsonl"), eval: readItems("eval.jsonl") };
}

/**
 * preference_labeler="human": the labelling page a run serves, and each round's wait for people.
 * A round's comparisons go into a LabelRound backed by `human_labels/round_NNNN.jsonl`; every
 * pick is fsynced there before the page hears "saved", so a run killed while people label
 * resumes with their picks (the resumed round samples the same answers from the checkpoint's
 * streams, and a comparison's id holds a hash of its texts, so a pick only ever applies to the
 * answers it was made on).
 */
import * as path from "node:path";
import { fnv1a32, LabelRound, seededOrder, startLabelServer, type Comparison, type EvalPoint, type LabelServer, type WaitResult } from "@pbrl/human-labels";
import { pairOf, type CollectedPair, type CompareResult, type OpenComparison, type OpenComparisonResult } from "@pbrl/preference-data";
import type { IterativeConfig } from "./config/madpo-iter-config.js";
import { ProgressBar, type ProgressMode } from "./progress.js";

/** The folder of the label files, inside output_dir. */
export const HUMAN_LABELS_DIR = "human_labels";

/** What the CLI and the default onLabelPage print: the link, and the warning when there is one. */
export function labelPageLines(url: string, warning?: string): string {
  return `${warning === undefined ? "" : `pbrl: warning: ${warning}\n`}pbrl: label at ${url}\n`;
}

/** A comparison's id: round, item, candidate, and a hash of what was shown, so a pick never applies to other texts. */
export function comparisonId(round: number, c: OpenComparison): string {
  const hash = fnv1a32(JSON.stringify([c.prompts, c.target.texts, c.comparator.texts]));
  return `r${pad(round)}-i${pad(c.itemIndex)}-c${c.candidate}-${hash.toString(16).padStart(8, "0")}`;
}

const pad = (n: number) => String(n).padStart(4, "0");

/** How a round's labelling went, for its log line and the round's metrics. */
export interface HumanRoundTally {
  comparisons: number;
  decided: number;
  labels: number;
  /** Pairs by winning side (people's and the fallback's). */
  wins: { target: number; comparator: number };
  /** Decided comparisons whose majority was a tie, both bad, or split evenly: no pair. */
  noPair: number;
  /** Undecided comparisons the reward labelled (human_fallback="reward"). */
  fallbackPairs: number;
  /** Undecided comparisons dropped. */
  dropped: number;
  reason: WaitResult["reason"];
}

export interface HumanRoundResult {
  pairs: CollectedPair[];
  tally: HumanRoundTally;
}

/** Raised when a stop request ends a round's wait: the picks are on disk, the round is not trained. */
export class LabellingStoppedError extends Error {
  override name = "LabellingStoppedError";
}

export interface HumanJudgesOptions {
  args: IterativeConfig;
  log: (line: string) => void;
  /** Receives the page's link (with its token) once it listens, and the warning when it listens beyond loopback. */
  announce: (url: string, warning?: string) => void;
  progress: ProgressMode;
  /** The team's eval curve so far, for the page's header. */
  evalCurve: () => EvalPoint[];
  /** True once a stop was requested (SIGINT/SIGTERM): a round stops waiting. */
  stopRequested: () => boolean;
}

export class HumanJudges {
  private current: LabelRound | null = null;
  private currentRound: number | undefined;
  /** True once the last round's labelling is over: the page then says so and stops asking. */
  private over = false;

  private server: LabelServer | undefined;

  private constructor(private readonly o: HumanJudgesOptions) {}

  static async start(o: HumanJudgesOptions): Promise<HumanJudges> {
    const judges = new HumanJudges(o);
    const a = o.args;
    const server = await startLabelServer({
      host: a.human_label_host,
      port: a.human_label_port,
      round: () => judges.current,
      status: () => ({
        run: path.basename(path.resolve(a.output_dir)),
        ...(judges.currentRound !== undefined && { round: judges.currentRound }),
        evalCurve: o.evalCurve(),
        ...(judges.over && { finished: true }),
      }),
    });
    judges.server = server;
    o.announce(server.url, server.warning);
    return judges;
  }

  /** The link to print for people (with its token). */
  get url(): string {
    return this.server!.url;
  }

  /**
   * Puts a round's comparisons to people and waits as human_min_labels and human_label_timeout_s
   * say; returns the pairs their picks make (and the fallback's, for what they left undecided).
   */
  async labelRound(round: number, comparisons: readonly OpenComparison[], roles: readonly string[]): Promise<HumanRoundResult> {
    const a = this.o.args;
    const byId = new Map(comparisons.map((c) => [comparisonId(round, c), c]));
    const shown: Comparison[] = [...byId].map(([id, c]) => ({
      id,
      round,
      itemIndex: c.itemIndex,
      prompts: c.prompts,
      roles: [...roles],
      target: c.target.texts,
      comparator: c.comparator.texts,
    }));
    const labelRound = await LabelRound.open({
      dir: path.join(a.output_dir, HUMAN_LABELS_DIR),
      round,
      comparisons: shown,
      labelsPerPair: a.human_labels_per_pair,
      leftIsTarget: seededOrder(a.seed),
    });
    const before = labelRound.progress();
    if (before.labels > 0)
      this.o.log(`pbrl: round ${round}: ${before.labels} picks already saved (${before.decided} of ${before.total} comparisons decided); not asked again`);
    this.current = labelRound;
    this.currentRound = round;
    const bar = new ProgressBar(`round ${round}/${a.num_iterations} labelling`, Math.max(1, shown.length), this.o.progress);
    const stop = new AbortController();
    const poll = setInterval(() => {
      bar.update(labelRound.progress().decided, `at ${this.url.split("?")[0]}`);
      if (this.o.stopRequested()) stop.abort(new LabellingStoppedError(`stopped while round ${round} waited for labels`));
    }, 500);
    let waited: WaitResult;
    try {
      waited = await labelRound.waitFor({
        ...(a.human_min_labels !== null && { minLabels: a.human_min_labels }),
        ...(a.human_label_timeout_s !== null && { timeoutMs: a.human_label_timeout_s * 1000 }),
        signal: stop.signal,
      });
    } finally {
      clearInterval(poll);
      this.current = null;
      this.currentRound = undefined;
    }
    this.over = round === a.num_iterations;
    bar.finish(`${waited.progress.labels} picks`);
    return humanPairs(labelRound, byId, a.human_fallback, waited.reason);
  }

  async close(): Promise<void> {
    await this.server?.close();
  }
}

/** The round's pairs: a winner by majority makes one; undecided comparisons go to the fallback or are dropped. */
export function humanPairs(
  round: LabelRound,
  byId: ReadonlyMap<string, OpenComparison>,
  fallback: "drop" | "reward",
  reason: HumanRoundTally["reason"],
): HumanRoundResult {
  const outcomes = round.outcome();
  const tally: HumanRoundTally = {
    comparisons: outcomes.length,
    decided: 0,
    labels: 0,
    wins: { target: 0, comparator: 0 },
    noPair: 0,
    fallbackPairs: 0,
    dropped: 0,
    reason,
  };
  const records = new Map(round.pairs().map((p) => [p.comparison.id, p]));
  const pairs: CollectedPair[] = [];
  for (const o of outcomes) {
    const c = byId.get(o.comparisonId)!;
    tally.labels += o.labels;
    const raw = c.rewards === undefined ? {} : { target_raw_reward: c.rewards.target.raw, comparator_raw_reward: c.rewards.comparator.raw };
    if (o.decided) {
      tally.decided += 1;
      const human = records.get(o.comparisonId);
      if (human === undefined) {
        tally.noPair += 1;
        continue;
      }
      tally.wins[human.winner] += 1;
      const { labels } = human;
      pairs.push(
        pairOf(c, human.winner, {
          // a person's pick is a preference, not a score: the winner 1, the loser 0
          winner_reward: 1,
          loser_reward: 0,
          candidate_reward_mean: 0.5,
          ...raw,
          scorer: "human",
          comparison_id: o.comparisonId,
          annotators: labels.map((l) => l.annotator),
          verdicts: labels.map((l) => l.verdict),
          shown_left: labels.map((l) => l.shown_left),
          rationales: labels.map((l) => l.rationale),
          agreement: human.agreement,
        }),
      );
      continue;
    }
    const r = c.rewards;
    if (fallback === "reward" && r !== undefined && r.target.processed !== r.comparator.processed) {
      const winner = r.target.processed > r.comparator.processed ? "target" : "comparator";
      const loser = winner === "target" ? "comparator" : "target";
      tally.fallbackPairs += 1;
      tally.wins[winner] += 1;
      pairs.push(
        pairOf(c, winner, {
          winner_reward: r[winner].processed,
          loser_reward: r[loser].processed,
          candidate_reward_mean: (r.target.processed + r.comparator.processed) / 2,
          raw_rewards: [r[winner].raw, r[loser].raw],
          ...raw,
          scorer: "task",
          comparison_id: o.comparisonId,
        }),
      );
    } else tally.dropped += 1;
  }
  return { pairs, tally };
}

/** A round labelled by people as the round's collection result (roundSummary and recordRound read it), with its labelling metrics. */
export async function labelledByPeople(
  round: number,
  judges: HumanJudges,
  open: OpenComparisonResult,
  roles: readonly string[],
  log: (line: string) => void,
): Promise<{ collected: CompareResult; metrics: Record<string, number> }> {
  const { pairs, tally } = await judges.labelRound(round, open.comparisons, roles);
  const t = tally;
  log(
    `pbrl: round ${round}: people decided ${t.decided} of ${t.comparisons} comparisons (${t.labels} picks; ${t.wins.target + t.wins.comparator - t.fallbackPairs} pairs, ${t.noPair} ties or both bad${t.fallbackPairs > 0 ? `, ${t.fallbackPairs} labelled by the reward` : ""}${t.dropped > 0 ? `, ${t.dropped} undecided dropped` : ""}; ${t.reason.replace("_", " ")})`,
  );
  return {
    collected: {
      pairs,
      rawRewards: open.rawRewards,
      invalid: open.invalid,
      wins: t.wins,
      itemsWithPairs: new Set(pairs.map((p) => p.itemIndex)).size,
    },
    metrics: {
      "human/comparisons": t.comparisons,
      "human/decided": t.decided,
      "human/labels": t.labels,
      "human/no_pair": t.noPair,
      "human/fallback_pairs": t.fallbackPairs,
      "human/dropped": t.dropped,
    },
  };
}

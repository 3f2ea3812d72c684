/**
 * The Human labels section's numbers, as pure functions of label records: picks per round, per
 * annotator, how well labels of the same comparison agree, and which rationales to show. The
 * majority is counted the way @pbrl/human-labels' queue counts it: the most common verdict, none
 * when the top verdicts tie.
 */
import { RECORDED_VERDICTS, type LabelRecord, type RecordedVerdict } from "@pbrl/human-labels";

export type VerdictCounts = Record<RecordedVerdict, number>;

export interface RoundTally {
  round: number;
  /** Distinct comparisons with at least one label. */
  comparisons: number;
  labels: number;
  counts: VerdictCounts;
}

export interface ComparisonTally {
  round: number;
  comparisonId: string;
  labels: number;
  counts: VerdictCounts;
  /** The most common verdict; null when two or more verdicts share the top count. */
  majority: RecordedVerdict | null;
  /** Share of the labels that give the most common verdict (tied or not). */
  agreement: number;
}

export interface AnnotatorTally {
  annotator: string;
  labels: number;
  counts: VerdictCounts;
  /** This annotator's labels on comparisons with two or more labels and a majority. */
  withMajority: number;
  /** Of those, the labels that give the majority verdict. */
  agreedWithMajority: number;
}

export interface AgreementSummary {
  /** Comparisons with two or more labels. */
  comparisons: number;
  /** Mean over those of {@link ComparisonTally.agreement}; null when there are none. */
  meanAgreement: number | null;
}

/** One comparison of one round: ids are unique within a round only. */
function comparisonKey(r: LabelRecord): string {
  return `${r.round}\n${r.comparison_id}`;
}

export function verdictCounts(records: readonly LabelRecord[]): VerdictCounts {
  const counts = Object.fromEntries(RECORDED_VERDICTS.map((v) => [v, 0])) as VerdictCounts;
  for (const r of records) counts[r.verdict] += 1;
  return counts;
}

/**
 * The first label of each annotator on each comparison, in input order, and how many later ones
 * were dropped: a second line by the same person (files joined by hand) would count their voice
 * twice, and the trainer ignores it too.
 */
export function distinctLabels(records: readonly LabelRecord[]): { labels: LabelRecord[]; repeats: number } {
  const seen = new Set<string>();
  const labels: LabelRecord[] = [];
  for (const r of records) {
    const key = `${comparisonKey(r)}\n${r.annotator}`;
    if (seen.has(key)) continue;
    seen.add(key);
    labels.push(r);
  }
  return { labels, repeats: records.length - labels.length };
}

/** The picks of one round's labels. */
export function roundTally(round: number, records: readonly LabelRecord[]): RoundTally {
  return { round, comparisons: new Set(records.map(comparisonKey)).size, labels: records.length, counts: verdictCounts(records) };
}

/** Per comparison, in the order each first appears. */
export function comparisonTallies(records: readonly LabelRecord[]): ComparisonTally[] {
  const groups = new Map<string, LabelRecord[]>();
  for (const r of records) {
    const group = groups.get(comparisonKey(r));
    if (group === undefined) groups.set(comparisonKey(r), [r]);
    else group.push(r);
  }
  return [...groups.values()].map((group) => {
    const counts = verdictCounts(group);
    const top = Math.max(...RECORDED_VERDICTS.map((v) => counts[v]));
    const leaders = RECORDED_VERDICTS.filter((v) => counts[v] === top);
    const first = group[0]!;
    return {
      round: first.round,
      comparisonId: first.comparison_id,
      labels: group.length,
      counts,
      majority: leaders.length === 1 ? leaders[0]! : null,
      agreement: top / group.length,
    };
  });
}

/** Per annotator, most labels first (then by name, so the order is the same every time). */
export function annotatorTallies(records: readonly LabelRecord[]): AnnotatorTally[] {
  const majorities = new Map<string, RecordedVerdict | null>();
  for (const c of comparisonTallies(records)) if (c.labels >= 2) majorities.set(`${c.round}\n${c.comparisonId}`, c.majority);
  const byAnnotator = new Map<string, LabelRecord[]>();
  for (const r of records) {
    const own = byAnnotator.get(r.annotator);
    if (own === undefined) byAnnotator.set(r.annotator, [r]);
    else own.push(r);
  }
  return [...byAnnotator.entries()]
    .map(([annotator, own]) => {
      let withMajority = 0;
      let agreedWithMajority = 0;
      for (const r of own) {
        const majority = majorities.get(comparisonKey(r));
        if (majority === undefined || majority === null) continue;
        withMajority += 1;
        if (r.verdict === majority) agreedWithMajority += 1;
      }
      return { annotator, labels: own.length, counts: verdictCounts(own), withMajority, agreedWithMajority };
    })
    .sort((a, b) => b.labels - a.labels || (a.annotator < b.annotator ? -1 : a.annotator > b.annotator ? 1 : 0));
}

/** How well labels of the same comparison agree, over the comparisons labelled more than once. */
export function agreementSummary(records: readonly LabelRecord[]): AgreementSummary {
  const shared = comparisonTallies(records).filter((c) => c.labels >= 2);
  if (shared.length === 0) return { comparisons: 0, meanAgreement: null };
  return { comparisons: shared.length, meanAgreement: shared.reduce((s, c) => s + c.agreement, 0) / shared.length };
}

/**
 * Up to `limit` labels with a rationale, the latest first: by `labelled_at`, then the later round,
 * then the later line, so the same files always give the same choice.
 */
export function rationaleSamples(records: readonly LabelRecord[], limit = 8): LabelRecord[] {
  return records
    .map((r, index) => ({ r, index, at: Date.parse(r.labelled_at) }))
    .filter(({ r }) => r.rationale !== null && r.rationale.trim() !== "")
    .sort((a, b) => b.at - a.at || b.r.round - a.r.round || b.index - a.index)
    .slice(0, Math.max(0, limit))
    .map(({ r }) => r);
}

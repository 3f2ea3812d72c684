/**
 * Human labels (runs with `preference_labeler: "human"`): the picks per round and per annotator,
 * how well annotators of the same comparison agree, and a few rationales. Shown only when the run
 * has label files; a file that cannot be read is named with its error and the other rounds are
 * still shown. All text from the files is escaped.
 */
import * as path from "node:path";
import { RECORDED_VERDICTS, type RecordedVerdict } from "@pbrl/human-labels";
import { formatPercent } from "../format-number.js";
import type { PairSet, RunData } from "../run-data.js";
import { agreementSummary, annotatorTallies, distinctLabels, rationaleSamples, roundTally, type VerdictCounts } from "./human-label-stats.js";
import { el, note, section, table, type Content, type Html } from "./html.js";
import { clip } from "./section-samples.js";

export const HUMAN_LABELS_SECTION = { id: "human-labels", title: "Human labels" } as const;

const RATIONALES_SHOWN = 8;

const VERDICT_TEXT: Record<RecordedVerdict, string> = { target: "target", comparator: "comparator", tie: "tie", both_bad: "both bad" };

/** "3 human, 1 task": where a round's pairs came from, as its round file records per pair. */
function pairSources(set: PairSet | undefined): string {
  if (set === undefined) return "—";
  const sources = Object.entries(set.pairScorers)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([scorer, n]) => `${n} ${scorer}`);
  return sources.length === 0 ? String(set.numPairs) : sources.join(", ");
}

function shares(counts: VerdictCounts, total: number): string[] {
  return RECORDED_VERDICTS.map((v) => formatPercent(total === 0 ? null : counts[v] / total));
}

function heading(text: string): Html {
  return el("h3", {}, text);
}

/** The section, or null when the run has no label files (most runs: the task reward labels them). */
export function humanLabelsSection(run: RunData, maxTextLength: number): Html | null {
  const data = run.humanLabels;
  if (data === null) return null;
  const { labels, repeats } = distinctLabels(data.files.flatMap((f) => f.records));
  const roundFiles = new Map(run.rounds.map((r) => [r.iteration, r]));
  const body: Content[] = [
    note(
      `People picked between the target's and the comparator's joint answers; their picks are in ${path.relative(run.dir, data.dir) || data.dir}/round_NNNN.jsonl. A comparison labelled by several people is decided by the most common verdict (none when the top verdicts tie). Pairs: the round file's pairs by who labelled them (human, or the fallback reward).`,
    ),
  ];
  const errors = data.files.filter((f) => f.error !== null);
  if (errors.length > 0)
    body.push(
      note("These label files could not be read; their rounds are left out of the numbers below:"),
      el(
        "ul",
        { class: "problems" },
        errors.map((f) => el("li", {}, f.error ?? "")),
      ),
    );
  if (repeats > 0)
    body.push(note(`${repeats} repeated labels (the same annotator on the same comparison) are left out: only each person's first pick counts.`));

  body.push(
    heading("Picks per round"),
    table(
      ["round", "comparisons labelled", "labels", "target wins", "comparator wins", "ties", "both bad", "pairs"],
      data.files.map((f) => {
        if (f.error !== null) return [String(f.round), "unreadable", "—", "—", "—", "—", "—", pairSources(roundFiles.get(f.round))];
        const t = roundTally(
          f.round,
          labels.filter((r) => r.round === f.round),
        );
        return [
          String(t.round),
          String(t.comparisons),
          String(t.labels),
          ...RECORDED_VERDICTS.map((v) => String(t.counts[v])),
          pairSources(roundFiles.get(f.round)),
        ];
      }),
      "numbers",
    ),
  );

  const annotators = annotatorTallies(labels);
  body.push(heading("Annotators"));
  if (annotators.length === 0) body.push(note("No labels yet."));
  else
    body.push(
      table(
        ["annotator", "labels", "target", "comparator", "tie", "both bad", "agrees with the majority"],
        annotators.map((a) => [
          a.annotator,
          String(a.labels),
          ...shares(a.counts, a.labels),
          a.withMajority === 0 ? "—" : `${formatPercent(a.agreedWithMajority / a.withMajority)} (${a.agreedWithMajority} of ${a.withMajority})`,
        ]),
        "numbers",
      ),
      note("Agrees with the majority: over this person's labels on comparisons with two or more labels and a most common verdict."),
    );

  const agreement = agreementSummary(labels);
  body.push(
    heading("Agreement"),
    table(
      ["comparisons with ≥ 2 labels", "mean share agreeing with the most common verdict"],
      [[String(agreement.comparisons), formatPercent(agreement.meanAgreement)]],
      "numbers",
    ),
  );

  const samples = rationaleSamples(labels, RATIONALES_SHOWN);
  body.push(heading("Rationales"));
  if (samples.length === 0) body.push(note("No label has a rationale."));
  else
    body.push(
      note(`The latest ${samples.length} labels that give a reason.`),
      table(
        ["labelled at", "round", "annotator", "verdict", "rationale"],
        samples.map((r) => [r.labelled_at, String(r.round), r.annotator, VERDICT_TEXT[r.verdict], el("pre", {}, clip(r.rationale ?? "", maxTextLength))]),
        "rationales",
      ),
    );
  return section(HUMAN_LABELS_SECTION.id, HUMAN_LABELS_SECTION.title, ...body);
}

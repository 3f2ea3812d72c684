/**
 * The report: one self-contained HTML file (inline CSS and SVG, no script, no external URL) with
 * one <section id> per part, always in the same order, each saying what is missing when its data
 * is — except Human labels, which only runs labelled by people have. Pure: the same RunData and
 * options give the same bytes.
 */
import * as path from "node:path";
import type { RunData } from "../run-data.js";
import { render, type Html } from "./html.js";
import { page } from "./page.js";
import { distributionsSection } from "./section-distributions.js";
import { evalSection } from "./section-eval.js";
import { HUMAN_LABELS_SECTION, humanLabelsSection } from "./section-human-labels.js";
import { overviewSection } from "./section-overview.js";
import { pairsSection } from "./section-pairs.js";
import { rewardModelSection } from "./section-reward-model.js";
import { roundsSection } from "./section-rounds.js";
import { samplesSection } from "./section-samples.js";
import { trainingSection } from "./section-training.js";

export interface RenderOptions {
  /** Page title; default "pbrl report: <run folder name>". */
  title?: string;
  /** Completions and prompts longer than this are cut (default 2000 characters). */
  maxTextLength?: number;
  /** Shown under the title when given (left out by default, so output is deterministic). */
  generatedAt?: string;
}

/**
 * The sections every report has, by id and title, in page order (a browser test can screenshot
 * each). {@link HUMAN_LABELS_SECTION} follows Rounds in a run that has label files.
 */
export const REPORT_SECTIONS = [
  { id: "overview", title: "Overview" },
  { id: "eval", title: "Evaluation reward" },
  { id: "training", title: "Training" },
  { id: "pairs", title: "Preference data" },
  { id: "rounds", title: "Rounds" },
  { id: "distributions", title: "Reward distributions" },
  { id: "reward-model", title: "Reward model" },
  { id: "samples", title: "Sample pairs" },
] as const;

export { HUMAN_LABELS_SECTION };

/** The sections of this run's report, in page order: {@link REPORT_SECTIONS}, with Human labels where the run has them. */
export function reportSections(run: RunData): readonly { id: string; title: string }[] {
  if (run.humanLabels === null) return REPORT_SECTIONS;
  const at = REPORT_SECTIONS.findIndex((s) => s.id === "rounds") + 1;
  return [...REPORT_SECTIONS.slice(0, at), HUMAN_LABELS_SECTION, ...REPORT_SECTIONS.slice(at)];
}

export function renderReport(run: RunData, options: RenderOptions = {}): string {
  const maxTextLength = options.maxTextLength ?? 2000;
  const humanLabels = humanLabelsSection(run, maxTextLength);
  const sections: Html[] = [
    overviewSection(run),
    evalSection(run),
    trainingSection(run),
    pairsSection(run),
    roundsSection(run),
    ...(humanLabels === null ? [] : [humanLabels]),
    distributionsSection(run),
    rewardModelSection(run),
    samplesSection(run, maxTextLength),
  ];
  const base = path.basename(path.normalize(run.dir));
  const name = base === "" || base === "." || base === ".." ? run.dir : base;
  return page({
    title: options.title ?? `pbrl report: ${name}`,
    dir: run.dir,
    nav: reportSections(run),
    body: sections.map((s) => render(s)).join("\n"),
    generatedAt: options.generatedAt,
  });
}

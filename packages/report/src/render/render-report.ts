/**
 * The report: one self-contained HTML file (inline CSS and SVG, no script, no external URL) with
 * one <section id> per part, always in the same order, each saying what is missing when its data
 * is. Pure: the same RunData and options give the same bytes.
 */
import * as path from "node:path";
import type { RunData } from "../run-data.js";
import { render, type Html } from "./html.js";
import { page } from "./page.js";
import { distributionsSection } from "./section-distributions.js";
import { evalSection } from "./section-eval.js";
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

/** The sections' ids and titles, in page order (a browser test can screenshot each). */
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

export function renderReport(run: RunData, options: RenderOptions = {}): string {
  const sections: Html[] = [
    overviewSection(run),
    evalSection(run),
    trainingSection(run),
    pairsSection(run),
    roundsSection(run),
    distributionsSection(run),
    rewardModelSection(run),
    samplesSection(run, options.maxTextLength ?? 2000),
  ];
  const base = path.basename(path.normalize(run.dir));
  const name = base === "" || base === "." || base === ".." ? run.dir : base;
  return page({
    title: options.title ?? `pbrl report: ${name}`,
    dir: run.dir,
    nav: REPORT_SECTIONS,
    body: sections.map((s) => render(s)).join("\n"),
    generatedAt: options.generatedAt,
  });
}

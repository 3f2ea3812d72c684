/**
 * report_to="tensorboard": the run's metrics records, sample completions and reward histograms
 * as TensorBoard event files under `<output_dir>/tensorboard/` (TensorBoard, and wandb's
 * TensorBoard sync, read them). Every numeric field of a record is a scalar tag at the record's
 * step, the env step CoMLRL plots against.
 */
import type { MetricsListener } from "./metrics-log.js";
import { tensorBoardDir, TensorBoardWriter } from "./tensorboard/index.js";

export interface TensorBoardLog {
  listener: MetricsListener;
  /** A round's raw rewards over the declared range's bins. */
  histogram(step: number, tag: string, values: readonly number[], range: readonly [number, number], bins: number): void;
  text(step: number, tag: string, markdown: string): void;
  close(): void;
}

// Bookkeeping fields of a record, not metrics.
const NOT_SCALARS = new Set(["step", "elapsed_s", "epoch", "update"]);

/** `resumeStep`: on resume, the first step the run writes again, so TensorBoard drops the killed run's later points. */
export function openTensorBoard(outputDir: string, resumeStep?: number): TensorBoardLog {
  const writer = new TensorBoardWriter(tensorBoardDir(outputDir), resumeStep === undefined ? {} : { resumeStep });
  return {
    listener: (record) => {
      const scalars = Object.fromEntries(Object.entries(record).filter(([k]) => !NOT_SCALARS.has(k)));
      writer.scalars(record.step, scalars);
    },
    histogram: (step, tag, values, range, bins) => void writer.histogram(step, tag, values, { min: range[0], max: range[1], bins }),
    text: (step, tag, markdown) => writer.text(step, tag, markdown),
    close: () => writer.close(),
  };
}

const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, "<br>");

/** A markdown table of a round's first pairs: the prompts, then each agent's winner and loser completions. */
export function pairsMarkdown(
  pairs: readonly {
    prompts: readonly string[];
    winner_completions: readonly string[];
    loser_completions: readonly string[];
    winner_reward: number;
    loser_reward: number;
  }[],
  max = 4,
): string {
  const rows = pairs
    .slice(0, max)
    .map(
      (p) =>
        `| ${cell(p.prompts.join(" / "))} | ${cell(p.winner_completions.join(" / "))} (${p.winner_reward.toFixed(3)}) | ${cell(p.loser_completions.join(" / "))} (${p.loser_reward.toFixed(3)}) |`,
    );
  return ["| prompts | winner | loser |", "|---|---|---|", ...rows].join("\n");
}

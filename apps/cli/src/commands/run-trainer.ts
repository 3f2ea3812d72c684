import { labelPageLines, MADPOIterTrainer, MADPOTrainer, MARLHFIterTrainer, MARLHFTrainer, type EvalResult, type MADPOTrainerOptions } from "@pbrl/trainers";
import { EXIT } from "../exit-codes.js";
import type { CliIO } from "../io.js";
import type { ResolvedRun, TrainerConfig } from "../run-config.js";

/** What the commands print about a finished run, whichever trainer ran it. */
export interface RunOutcome {
  evalBefore: EvalResult | undefined;
  evalAfter: EvalResult | undefined;
  updates: number;
  outputDir: string;
  summary: string;
  /** A signal stopped the run after a completed round (exit code 130; it can be resumed). */
  stopped: boolean;
  dispose: () => void;
}

/**
 * Trains with the resolved run and the trainer the config names. `inputPaths`: the local files
 * and folders the run reads besides its models (datasets, reward/formatter modules), by key; the
 * trainer refuses run folders that are, hold or lie inside them (the demo's built-in task has none).
 */
export async function runTrainer(
  run: Omit<ResolvedRun, "close" | "inputPaths"> & Partial<Pick<ResolvedRun, "inputPaths">>,
  cfg: TrainerConfig,
  io: CliIO,
): Promise<RunOutcome> {
  const common: Omit<MADPOTrainerOptions, "args"> = {
    ...(run.agentModel !== undefined ? { agentModel: run.agentModel } : {}),
    ...(run.agents !== undefined ? { agents: run.agents } : {}),
    trainDataset: run.trainDataset,
    ...(run.evalDataset !== undefined ? { evalDataset: run.evalDataset } : {}),
    ...(run.rewardFunc !== undefined ? { rewardFunc: run.rewardFunc } : {}),
    ...(run.rewardProcessor !== undefined ? { rewardProcessor: run.rewardProcessor } : {}),
    ...(run.formatters !== undefined ? { formatters: run.formatters } : {}),
    ...(run.inputPaths !== undefined ? { inputPaths: run.inputPaths } : {}),
    log: (line) => cfg.args.verbose && io.err(`${line}\n`),
  };
  if (cfg.trainer === "madpo" || cfg.trainer === "marlhf") {
    const t = cfg.trainer === "madpo" ? new MADPOTrainer({ ...common, args: cfg.args }) : new MARLHFTrainer({ ...common, args: cfg.args });
    const r = await t.train();
    return {
      evalBefore: r.evalBefore,
      evalAfter: r.evalAfter,
      updates: r.updates,
      outputDir: r.outputDir,
      summary: `${r.numPairs} preference pairs, ${r.updates} updates`,
      stopped: false,
      dispose: () => t.dispose(),
    };
  }
  // people need the link whether or not the run is verbose
  const iterative = { ...common, onLabelPage: (url: string, warning?: string) => io.err(labelPageLines(url, warning)) };
  const t = cfg.trainer === "madpo_iter" ? new MADPOIterTrainer({ ...iterative, args: cfg.args }) : new MARLHFIterTrainer({ ...iterative, args: cfg.args });
  const r = await t.train();
  const pairs = r.rounds.reduce((s, x) => s + x.pairs, 0);
  const summary = r.stopped
    ? `stopped after round ${r.rounds.at(-1)?.round ?? "?"} (resume with resume_from_checkpoint=true)`
    : `${r.rounds.length} rounds, ${pairs} new preference pairs, ${r.updates} updates`;
  return {
    evalBefore: r.evalBefore,
    evalAfter: r.evalAfter,
    updates: r.updates,
    outputDir: r.outputDir,
    summary,
    stopped: r.stopped,
    dispose: () => t.dispose(),
  };
}

export function evalLine(label: string, r: EvalResult | undefined): string {
  return r === undefined
    ? `${label}: no evaluation (no eval items, or eval_interval=0)`
    : `${label}: ${r["eval/turn_1/reward_mean"].toFixed(4)} (mean task reward over ${r.samples.length} eval items)`;
}

/** 0 for a finished run, 130 for one a signal stopped (resumable). */
export const exitCodeOf = (outcome: RunOutcome): number => (outcome.stopped ? EXIT.stopped : EXIT.ok);

/** The line that tells how to see the run. */
export const reportHint = (outputDir: string): string => `see the run: pbrl report ${/\s/.test(outputDir) ? JSON.stringify(outputDir) : outputDir}`;

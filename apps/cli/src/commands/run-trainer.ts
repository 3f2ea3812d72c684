import { MADPOTrainer, type EvalResult, type MADPOConfig, type TrainResult } from "@pbrl/trainers";
import type { CliIO } from "../io.js";
import type { ResolvedRun } from "../run-config.js";

/** Trains with the resolved run and prints the outcome. */
export async function runMadpo(run: ResolvedRun, args: MADPOConfig, io: CliIO): Promise<{ result: TrainResult; trainer: MADPOTrainer }> {
  const trainer = new MADPOTrainer({
    ...(run.agentModel !== undefined ? { agentModel: run.agentModel } : {}),
    ...(run.agents !== undefined ? { agents: run.agents } : {}),
    trainDataset: run.trainDataset,
    ...(run.evalDataset !== undefined ? { evalDataset: run.evalDataset } : {}),
    rewardFunc: run.rewardFunc,
    ...(run.rewardProcessor !== undefined ? { rewardProcessor: run.rewardProcessor } : {}),
    ...(run.formatters !== undefined ? { formatters: run.formatters } : {}),
    args,
    log: (line) => args.verbose && io.err(`${line}\n`),
  });
  const result = await trainer.train();
  return { result, trainer };
}

export function evalLine(label: string, r: EvalResult | undefined): string {
  return r === undefined ? `${label}: no evaluation (no eval items, or eval_interval=0)` : `${label}: ${r["eval/turn_1/reward_mean"].toFixed(4)} (mean task reward over ${r.samples.length} eval items)`;
}

import * as path from "node:path";
import { MADPOConfig, type EvalResult, type MADPOConfigInput } from "@pbrl/trainers";
import { BUILTIN_TASKS } from "../builtins.js";
import type { CliIO } from "../io.js";
import { readRunFile, splitRunFile } from "../run-config.js";
import { ASSETS_DIR } from "../tasks/summary-expansion.js";
import { evalLine, runMadpo } from "./run-trainer.js";

export const DEMO_MODEL_DIR = path.join(ASSETS_DIR, "demo-model");

/**
 * The demo's settings: the embedded task, sized to finish within minutes on two CPU cores.
 * Any of them can be overridden with key=value.
 */
export const DEMO_DEFAULTS: MADPOConfigInput = {
  output_dir: "pbrl-demo",
  seed: 0,
  preference_num_candidates: 16,
  preference_pairs_per_sample: 8,
  pair_selection: "reward_gap",
  max_new_tokens: 32,
  temperature: 1.0,
  top_p: 1.0,
  top_k: null,
  num_train_epochs: 2,
  train_batch_size: 8,
  agent_learning_rate: 2e-4,
  dpo_beta: 0.1,
  eval_interval: 1000,
  eval_num_samples: 32,
  logging_steps: 1,
  generation_batch_size: 64,
};

export const DEMO_HELP = `pbrl demo [key=value …]

Trains two agents with MADPO on the embedded task: from the same small pretrained Llama, agent 0
learns to write a short faithful summary of a text and agent 1 a longer faithful expansion of
it, rewarded jointly (scores, length ratio, faithfulness). Prints the eval reward before and
after training with example outputs. Defaults: ${Object.entries(DEMO_DEFAULTS)
  .map(([k, v]) => `${k}=${v === null ? "null" : String(v)}`)
  .join(" ")}; any MADPOConfig field can be overridden, e.g. pbrl demo seed=1 num_train_epochs=3.
`;

function examples(r: EvalResult | undefined, n: number): string {
  if (r === undefined) return "";
  return r.samples
    .slice(0, n)
    .map((s) => `  text:      ${s.prompts[0]!.split("\n")[0]!.replace(/^Text: /, "")}\n  summary:   ${s.completions[0]!.split("\n")[0]!.trim()}\n  expansion: ${s.completions[1]!.split("\n")[0]!.trim()}\n  reward:    ${s.reward.toFixed(3)}`)
    .join("\n\n");
}

export async function demoCommand(argv: string[], io: CliIO): Promise<number> {
  const file = readRunFile(undefined, argv);
  const { config } = splitRunFile(file.values, "madpo");
  const args = MADPOConfig({ ...DEMO_DEFAULTS, ...config } as MADPOConfigInput);
  const task = BUILTIN_TASKS["summary_expansion"]!;
  const data = task.load();
  const started = Date.now();
  io.err(`pbrl demo: MADPO, 2 agents from ${DEMO_MODEL_DIR}, ${data.train.length} training texts, ${args.eval_num_samples} eval texts, seed ${args.seed}\n`);
  const { result, trainer } = await runMadpo(
    { agentModel: DEMO_MODEL_DIR, trainDataset: data.train, evalDataset: data.eval, rewardFunc: task.rewardFunc, formatters: task.formatters },
    args,
    io,
  );
  const minutes = ((Date.now() - started) / 60000).toFixed(1);
  io.out(`\n${evalLine("eval reward before", result.evalBefore)}\n${evalLine("eval reward after ", result.evalAfter)}\n`);
  if (result.evalBefore !== undefined && result.evalAfter !== undefined) {
    io.out(`\nexamples before training:\n${examples(result.evalBefore, 2)}\n\nexamples after training:\n${examples(result.evalAfter, 2)}\n`);
  }
  io.out(`\n${result.numPairs} preference pairs, ${result.updates} updates in ${minutes} min; metrics, pairs and trained agents in ${result.outputDir}\n`);
  trainer.dispose();
  return 0;
}

import * as path from "node:path";
import type { EvalResult, MADPOIterConfigInput, MARLHFIterConfigInput } from "@pbrl/trainers";
import { BUILTIN_TASKS } from "../builtins.js";
import type { CliIO } from "../io.js";
import { UsageError } from "../io.js";
import { buildTrainerConfig, readRunFile, splitRunFile, trainerName } from "../run-config.js";
import { ASSETS_DIR } from "../tasks/summary-expansion.js";
import { evalLine, exitCodeOf, reportHint, runTrainer } from "./run-trainer.js";

export const DEMO_MODEL_DIR = path.join(ASSETS_DIR, "demo-model");

/**
 * The demo's settings: iterative MADPO on the embedded task, sized to finish within minutes on
 * two CPU cores. Any MADPOIterConfig field can be overridden with key=value.
 */
export const DEMO_DEFAULTS: MADPOIterConfigInput = {
  output_dir: "pbrl-demo",
  // running the demo again replaces the previous demo's outputs (only the files a run writes)
  overwrite_output_dir: true,
  log_reward_distribution: true,
  seed: 0,
  num_iterations: 3,
  comparator_policy: "history",
  comparator_history_k: 1,
  preference_replay_mode: "lambda_decay",
  preference_replay_lambda: 0.5,
  preference_num_candidates: 8,
  preference_pairs_per_sample: 4,
  pair_selection: "comparator_reward",
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

/**
 * `pbrl demo trainer=marlhf_iter`: the same task, rounds and comparator; each round a fresh joint
 * reward model is fitted to the selected pairs, and the agents learn with MAGRPO against it.
 */
export const MARLHF_DEMO_DEFAULTS: MARLHFIterConfigInput = {
  ...DEMO_DEFAULTS,
  // Twice MADPO's pairs per text: the reward model generalises from more comparisons of the same
  // candidates (held-out accuracy 0.63–0.65 over 3 seeds against ≈0.56 with 4), and they cost no extra generation.
  preference_pairs_per_sample: 8,
  num_train_epochs: 2,
  rl_algorithm: "magrpo",
  num_generations: 4,
  train_batch_size: 4,
  agent_learning_rate: 3e-4,
  reward_learning_rate: 5e-4,
  reward_num_train_epochs: 2,
  reward_train_batch_size: 8,
};

const DEMO_TRAINERS = { madpo_iter: DEMO_DEFAULTS, marlhf_iter: MARLHF_DEMO_DEFAULTS } as const;

const settings = (defaults: object) =>
  Object.entries(defaults)
    .map(([k, v]) => `${k}=${v === null ? "null" : String(v)}`)
    .join(" ");

/**
 * `pbrl demo preference_labeler=human`: a person labels the rounds, so a round is as many
 * comparisons as one clicks through in a minute: HUMAN_DEMO_ITEMS texts, one comparison each,
 * two candidates a side (the least a round samples), five rounds. With so few picks each one
 * counts: every round trains on a draw from all the picks so far (all_history), and the eval
 * curve gets a point per round. Measured with a scripted judge that picks what the task reward
 * prefers (docs/human-labels.md): 60 picks moved the eval reward by +0.07 to +0.12 over three
 * seeds; 60 random picks by −0.09 to +0.10.
 */
export const HUMAN_DEMO_ITEMS = 12;
export const HUMAN_DEMO_DEFAULTS = {
  num_iterations: 5,
  preference_num_candidates: 2,
  human_pairs_per_item: 1,
  preference_replay_mode: "all_history",
  preference_replay_lambda: null,
  preference_replay_sample_size: 64,
  eval_num_samples: 32,
  eval_interval: 16,
} as const;

export const DEMO_HELP = `pbrl demo [key=value …]

Trains two agents with iterative MADPO on the embedded task: from the same small pretrained
Llama, agent 0 learns to write a short faithful summary of a text and agent 1 a longer faithful
expansion of it, rewarded jointly (faithfulness, coverage, brevity, length ratio). Each round
the agents answer every text, a comparator (the weights of the previous round's start) answers
too, comparisons with a clear winner become preference pairs, a λ-decay replay buffer mixes
them with earlier rounds', and MADPO trains both agents. Prints the eval reward before and after
training with example outputs. Defaults: ${settings(DEMO_DEFAULTS)}; any MADPOIterConfig field can
be overridden, e.g. pbrl demo seed=1 num_iterations=4.

pbrl demo trainer=marlhf_iter runs iterative MARLHF on the same task instead: each round fits a
fresh joint reward model to the pairs and trains the agents with RL against it. Defaults:
${settings(MARLHF_DEMO_DEFAULTS)}; any MARLHFIterConfig field can be overridden.

pbrl demo preference_labeler=human makes you the judge: the run prints a link to a page on this
machine where you pick, for each of ${HUMAN_DEMO_ITEMS} texts a round, the better of two joint answers
(keys 1 left, 2 right, 3 tie, 4 both bad, s skip); your picks are the round's preference pairs.
It then uses ${settings(HUMAN_DEMO_DEFAULTS)} (docs/human-labels.md).
`;

function examples(r: EvalResult | undefined, n: number): string {
  if (r === undefined) return "";
  return r.samples
    .slice(0, n)
    .map(
      (s) =>
        `  text:      ${s.prompts[0]!.split("\n")[0]!.replace(/^Text: /, "")}\n  summary:   ${s.completions[0]!.split("\n")[0]!.trim()}\n  expansion: ${s.completions[1]!.split("\n")[0]!.trim()}\n  reward:    ${s.reward.toFixed(3)}`,
    )
    .join("\n\n");
}

export async function demoCommand(argv: string[], io: CliIO): Promise<number> {
  const file = readRunFile(undefined, argv);
  const trainer = trainerName(file.values["trainer"] ?? "madpo_iter");
  if (trainer !== "madpo_iter" && trainer !== "marlhf_iter")
    throw new UsageError(`pbrl demo: trainer=${trainer} has no demo; the demo runs trainer=madpo_iter (default) or trainer=marlhf_iter`);
  const { config } = splitRunFile(file.values, trainer);
  let cfg = buildTrainerConfig(trainer, { ...DEMO_TRAINERS[trainer], ...config });
  const people = (cfg.trainer === "madpo_iter" || cfg.trainer === "marlhf_iter") && cfg.args.preference_labeler === "human";
  if (people) cfg = buildTrainerConfig(trainer, { ...DEMO_TRAINERS[trainer], ...HUMAN_DEMO_DEFAULTS, ...config });
  if (cfg.trainer !== "madpo_iter" && cfg.trainer !== "marlhf_iter") throw new UsageError(`pbrl demo: trainer=${trainer} has no demo`);
  const args = cfg.args;
  const task = BUILTIN_TASKS["summary_expansion"]!;
  const loaded = task.load();
  const data = people ? { ...loaded, train: loaded.train.slice(0, HUMAN_DEMO_ITEMS) } : loaded;
  const started = Date.now();
  io.err(
    `pbrl demo: iterative ${trainer === "madpo_iter" ? "MADPO" : `MARLHF (${cfg.trainer === "marlhf_iter" ? cfg.args.rl_algorithm : ""})`}, 2 agents from ${DEMO_MODEL_DIR}, ${data.train.length} training texts, ${args.eval_num_samples} eval texts, ${args.num_iterations} rounds, seed ${args.seed}\n`,
  );
  if (people)
    io.err(
      `pbrl demo: you are the judge: open the link printed below; each round shows ${data.train.length} texts, each with two joint answers (a summary and an expansion by each side). Press 1 if the left pair is better, 2 if the right one is, 3 for a tie, 4 if both are bad, s to skip. The round trains once every comparison is decided.\n`,
    );
  const outcome = await runTrainer(
    { agentModel: DEMO_MODEL_DIR, trainDataset: data.train, evalDataset: data.eval, rewardFunc: task.rewardFunc, formatters: task.formatters },
    cfg,
    io,
  );
  const minutes = ((Date.now() - started) / 60000).toFixed(1);
  io.out(`\n${evalLine("eval reward before", outcome.evalBefore)}\n${evalLine("eval reward after ", outcome.evalAfter)}\n`);
  if (outcome.evalBefore !== undefined && outcome.evalAfter !== undefined) {
    io.out(`\nexamples before training:\n${examples(outcome.evalBefore, 2)}\n\nexamples after training:\n${examples(outcome.evalAfter, 2)}\n`);
  }
  io.out(`\n${outcome.summary} in ${minutes} min; metrics, round files, checkpoints and trained agents in ${outcome.outputDir}\n`);
  io.out(`${reportHint(outcome.outputDir)}\n`);
  outcome.dispose();
  return exitCodeOf(outcome);
}

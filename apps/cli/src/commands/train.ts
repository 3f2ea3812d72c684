import { parseFlags } from "../args.js";
import { UsageError, type CliIO } from "../io.js";
import { buildTrainerConfig, readRunFile, resolveRun, splitRunFile, trainerName } from "../run-config.js";
import { evalLine, exitCodeOf, reportHint, runTrainer } from "./run-trainer.js";

export const TRAIN_HELP = `pbrl train --config FILE.yaml [key=value …]

Trains with a run file (YAML or JSON) whose keys are:
  trainer          madpo or marlhf (collect once, then train), madpo_iter or marlhf_iter
                   (rounds against a comparator); marlhf* fit a joint reward model and run RL
  agent_model      one checkpoint folder or hub id for every agent, or
  agents           a list with one per agent
  train_dataset    task items: a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub
                   dataset id org/name (with train_dataset_split/_config/_revision); a prompt
                   may be a list of chat messages (docs/datasets.md, docs/chat-prompts.md)
  eval_dataset     the same, for evaluation (eval_dataset_split, default "test")
  formatters       a template with {field} placeholders, a list (one per agent), or a .mjs module
                   exporting \`formatters\`
  reward_func      a built-in name (summary_expansion) or a .mjs module exporting \`reward_func\`
                   (and optionally \`reward_processor\`)
  reward_processor a .mjs module exporting \`reward_processor\`
                   Reward and formatters modules run in a worker thread, chat templates in a
                   process of their own (only data crosses: strings, numbers, plain objects); a
                   call longer than reward_timeout_s (default 300) stops the run. Every prompt is
                   formatted and rendered once, before output_dir is touched
and any field of the trainer's config (MADPOConfig, MADPOIterConfig, MARLHFConfig or
MARLHFIterConfig: num_train_epochs, dpo_beta, seed, output_dir, num_iterations, comparator_policy,
preference_replay_mode, rl_algorithm, num_generations, reward_learning_rate, …; pbrl config fields
TRAINER lists them with their defaults). key=value arguments override the file, e.g.
num_train_epochs=3 top_k=null: numbers, true/false, null and [flow, lists] where the key takes
them, otherwise the text as written (formatters=Text: {txt} is the template "Text: {txt}").
Relative paths in the file are resolved against the file's folder, relative paths in key=value
arguments against the current directory. Files must be UTF-8.

Exit codes: 0 done, 2 bad configuration or input, 130 stopped by SIGINT/SIGTERM (while the run
starts: nothing written; an iterative run first finishes its round and checkpoint: resume with
resume_from_checkpoint=true), 1 anything else.
See docs/errors.md.
`;

export async function trainCommand(argv: string[], io: CliIO): Promise<number> {
  const overrides = argv.filter((a) => !a.startsWith("-") && a.includes("="));
  const flags = argv.filter((a) => !overrides.includes(a));
  const { values } = parseFlags(flags, { config: { type: "string" } }, "train");
  if (values.config === undefined && overrides.length === 0)
    throw new UsageError("pbrl train: pass --config FILE.yaml (and/or key=value overrides); see pbrl train --help");
  const file = readRunFile(values.config, overrides);
  const trainer = trainerName(file.values["trainer"] ?? "madpo");
  const { config, run } = splitRunFile(file.values, trainer);
  const cfg = buildTrainerConfig(trainer, config);
  const resolved = await resolveRun(run, { rewardTimeoutS: cfg.args.reward_timeout_s });
  try {
    const outcome = await runTrainer(resolved, cfg, io);
    io.out(`${evalLine("eval reward before", outcome.evalBefore)}\n${evalLine("eval reward after ", outcome.evalAfter)}\n`);
    io.out(`${outcome.summary}; outputs in ${outcome.outputDir}\n${reportHint(outcome.outputDir)}\n`);
    outcome.dispose();
    return exitCodeOf(outcome);
  } finally {
    // The reward worker thread, busy or not, must not outlive the run (nor keep the process alive).
    await resolved.close();
  }
}

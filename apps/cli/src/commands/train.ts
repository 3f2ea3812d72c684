import { availableParallelism } from "node:os";
import { checkDdp, closeRankChannels, serveAgentRank, TRAINER_CONFIGS } from "@pbrl/trainers";
import { parseFlags } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { LAUNCH_FLAG_NAMES, launchPlan, rankArgv, type LaunchFlags } from "../launch/launch-plan.js";
import { freeLoopbackPort, runRanks } from "../launch/launcher.js";
import { TEST_RANK_VAR, testRank } from "../launch/test-rank.js";
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

Launching ranks (parallel_training=ddp; docs/distributed.md), as torchrun does:
  --nproc_per_node N   start N ranks on this host, each running this same command with
                       torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
                       LOCAL_RANK, LOCAL_WORLD_SIZE) and OMP_NUM_THREADS and PBRL_NATIVE_THREADS
                       = its share of the cores unless set; every line a rank prints is
                       prefixed with [rank R]. A rank that fails stops the others (SIGTERM,
                       then SIGKILL 30 s later) and the launch exits 1 naming it (2 when its
                       configuration was bad); SIGINT/SIGTERM go to every rank once.
  --nnodes K           hosts in the run (default 1, or SLURM_NNODES)
  --node_rank I        this host's number, 0 … K-1 (default 0, or SLURM_NODEID)
  --master_addr HOST   node 0's address (or MASTER_ADDR); one host alone: 127.0.0.1
  --master_port PORT   the rendezvous port on node 0 (or MASTER_PORT); default 29500, one host
                       alone: a free port

Exit codes: 0 done, 2 bad configuration or input, 130 stopped by SIGINT/SIGTERM (while the run
starts: nothing written; an iterative run first finishes its round and checkpoint: resume with
resume_from_checkpoint=true), 1 anything else.
See docs/errors.md.
`;

export async function trainCommand(argv: string[], io: CliIO): Promise<number> {
  const overrides = argv.filter((a) => !a.startsWith("-") && a.includes("="));
  const flags = argv.filter((a) => !overrides.includes(a));
  const str = { type: "string" } as const;
  const options = { config: str, nproc_per_node: str, nnodes: str, node_rank: str, master_addr: str, master_port: str } as const;
  const { values } = parseFlags(flags, options, "train");
  const testMode = process.env[TEST_RANK_VAR];
  if (values.nproc_per_node !== undefined) {
    const launch: LaunchFlags = values;
    const plan = launchPlan(launch, process.env, availableParallelism(), await freeLoopbackPort());
    return runRanks(plan, { command: [process.argv[1]!, "train", ...rankArgv(argv)] }, io);
  }
  for (const f of LAUNCH_FLAG_NAMES)
    if (values[f] !== undefined) throw new UsageError(`pbrl train: --${f} only goes with --nproc_per_node N (the ranks this host starts)`);
  if (testMode !== undefined) return testRank(testMode, argv, io);
  if (values.config === undefined && overrides.length === 0)
    throw new UsageError("pbrl train: pass --config FILE.yaml (and/or key=value overrides); see pbrl train --help");
  const file = readRunFile(values.config, overrides);
  const trainer = trainerName(file.values["trainer"] ?? "madpo");
  const { config, run } = splitRunFile(file.values, trainer);
  const cfg = buildTrainerConfig(trainer, config);
  const a = cfg.args;
  if (a.parallel_training === "ddp" && Number(process.env["RANK"] ?? "0") >= 1) {
    // A rank ≥ 1 runs no trainer: it hosts its agents for rank 0, which reads the data and writes the run.
    const actors = a.collaboration_mode === "centralized" ? 1 : a.num_agents;
    checkDdp(TRAINER_CONFIGS[trainer].configName, trainer, a);
    // Ctrl-C reaches every rank; rank 0 finishes its round and checkpoint, which needs this rank's
    // agents, then tells it to stop: so a signal here is noted, not obeyed.
    const note = (signal: NodeJS.Signals) => io.err(`pbrl: ${signal} on rank ${process.env["RANK"]}: serving until rank 0 has finished its round\n`);
    process.on("SIGINT", note);
    process.on("SIGTERM", note);
    try {
      await serveAgentRank({ numAgents: actors, timeoutSeconds: a.ddp_timeout, log: (line) => a.verbose && io.err(`${line}\n`) });
    } finally {
      process.off("SIGINT", note);
      process.off("SIGTERM", note);
    }
    return EXIT.ok;
  }
  const resolved = await resolveRun(run, {
    rewardTimeoutS: cfg.args.reward_timeout_s,
    rewardOptional: "preference_labeler" in cfg.args && cfg.args.preference_labeler === "human",
  });
  try {
    const outcome = await runTrainer(resolved, cfg, io);
    io.out(`${evalLine("eval reward before", outcome.evalBefore)}\n${evalLine("eval reward after ", outcome.evalAfter)}\n`);
    io.out(`${outcome.summary}; outputs in ${outcome.outputDir}\n${reportHint(outcome.outputDir)}\n`);
    outcome.dispose();
    return exitCodeOf(outcome);
  } finally {
    // ddp: the other ranks wait for rank 0's word to stop (after every exchange in flight).
    await closeRankChannels();
    // The reward worker thread, busy or not, must not outlive the run (nor keep the process alive).
    await resolved.close();
  }
}

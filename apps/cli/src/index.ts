import { asError, translateHeapExhaustion } from "@pbrl/core-tensor";
import { hubProgressPrinter, onHubProgress } from "@pbrl/models";
import { closest } from "./args.js";
import { CONFIG_HELP, configCommand } from "./commands/config.js";
import { DEMO_HELP, demoCommand } from "./commands/demo.js";
import { TRAIN_HELP, trainCommand } from "./commands/train.js";
import { BENCH_HELP, benchCommand } from "./commands/bench.js";
import { CONVERT_HELP, convertCommand } from "./commands/convert.js";
import { GENERATE_HELP, generateCommand } from "./commands/generate.js";
import { SCORE_HELP, scoreCommand } from "./commands/score.js";
import { REPORT_HELP, reportCommand } from "./commands/report.js";
import { PUSH_HELP, pushCommand } from "./commands/push.js";
import { EXIT, exitCodeFor } from "./exit-codes.js";
import { processIO, UsageError, type CliIO } from "./io.js";
import { cliVersion } from "./version.js";

export { processIO, UsageError };
export { BAD_INPUT_ERRORS, EXIT, exitCodeFor, isBadInput } from "./exit-codes.js";
export type { CliIO };
export { cliVersion };

interface Command {
  summary: string;
  help: string;
  run: (argv: string[], io: CliIO) => Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  demo: { summary: "train two agents with MADPO on the embedded task (the main job)", help: DEMO_HELP, run: demoCommand },
  train: { summary: "train agents from a run file (YAML/JSON) and key=value overrides", help: TRAIN_HELP, run: trainCommand },
  report: { summary: "write an HTML report of a run (plots, rounds, sample completions)", help: REPORT_HELP, run: reportCommand },
  push: { summary: "upload a checkpoint folder (or a run's agents) to the Hugging Face hub", help: PUSH_HELP, run: pushCommand },
  config: { summary: "validate a trainer configuration; list its fields; JSON Schema for editors", help: CONFIG_HELP, run: configCommand },
  generate: { summary: "generate text with a checkpoint", help: GENERATE_HELP, run: generateCommand },
  score: { summary: "log-probability of a completion under a checkpoint", help: SCORE_HELP, run: scoreCommand },
  convert: { summary: "re-save a checkpoint with pbrl's writer (dtype, shards)", help: CONVERT_HELP, run: convertCommand },
  bench: { summary: "training/generation speed and memory per backend, against PyTorch", help: BENCH_HELP, run: benchCommand },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `pbrl — multi-agent preference-based RL for LLM teams\n\nUsage: pbrl <command> [options]\n\nCommands:\n${lines.join("\n")}\n\nRun \`pbrl <command> --help\` for a command's options; \`pbrl --version\` prints the version.\n\nExit codes: 0 done, 2 bad configuration or input (the message says what to change), 130 stopped by\nSIGINT/SIGTERM, 1 anything else. docs/errors.md lists the errors and their fixes.\n`;
}

/** Runs the CLI with `argv` (without node and script path); returns the exit code. */
export async function main(argv: string[], io: CliIO = processIO): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    io.out(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-v" || name === "-V" || name === "version") {
    io.out(`pbrl ${cliVersion()}\n`);
    return 0;
  }
  const cmd = COMMANDS[name];
  if (cmd === undefined) {
    const near = closest(name, Object.keys(COMMANDS));
    io.err(`pbrl: unknown command "${name}"${near ? ` (did you mean "${near}"?)` : ""}\n\n${usage()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(cmd.help);
    return 0;
  }
  // hub downloads (models, datasets) and uploads report their bytes on stderr, for every command
  const stopProgress = onHubProgress(hubProgressPrinter(io.err, { isTTY: io.isTTY }));
  try {
    return await cmd.run(rest, io);
  } catch (thrown) {
    // A kernel that ran out of the wasm heap despite the estimates reads as the same error.
    const err = translateHeapExhaustion(thrown, `pbrl ${name}`);
    const code = exitCodeFor(err);
    // A thrown non-Error (`throw { code: 1 }`) is shown as JSON, not "[object Object]".
    const e = asError(err);
    if (e.name === "UsageError" || e.name === "ConfigError") io.err(`${e.message}\n`);
    // Too much work for the backend's memory is bad input: the message says what to change.
    else if (e.name === "MemoryBudgetError") io.err(`pbrl ${name}: not enough memory: ${e.message}\n`);
    // Library errors carry a message written for users; the stack is for PBRL_DEBUG=1.
    else io.err(`pbrl ${name}: ${e.name && e.name !== "Error" ? `${e.name}: ` : ""}${e.message}\n`);
    if (process.env["PBRL_DEBUG"] === "1" && e.stack) io.err(`${e.stack}\n`);
    else if (code === EXIT.failed) io.err(`pbrl ${name}: not an input error (exit code 1); PBRL_DEBUG=1 prints where it happened\n`);
    return code;
  } finally {
    stopProgress();
  }
}

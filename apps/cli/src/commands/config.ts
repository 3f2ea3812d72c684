import { ConfigError } from "@pbrl/trainers";
import { UsageError, type CliIO } from "../io.js";
import { buildTrainerConfig, readRunFile, splitRunFile, trainerName } from "../run-config.js";

export const CONFIG_HELP = `pbrl config validate TRAINER [FILE] [key=value …]

Validates a configuration for TRAINER (madpo, madpo_iter, marlhf or marlhf_iter) from an optional
YAML/JSON FILE plus key=value overrides, and prints the normalized config as JSON with every
default filled in — or every problem at once (exit code 2). A \`trainer:\` key in FILE (or a
trainer=… override) must name TRAINER.
`;

export async function configCommand(argv: string[], io: CliIO): Promise<number> {
  const [sub, trainerArg, ...rest] = argv;
  if (sub !== "validate" || trainerArg === undefined) throw new UsageError("usage: pbrl config validate TRAINER [FILE] [key=value …]");
  const overrides = rest.filter((a) => a.includes("="));
  const files = rest.filter((a) => !a.includes("="));
  if (files.length > 1) throw new UsageError(`pbrl config validate: one FILE at most, got ${files.join(", ")}`);
  const trainer = trainerName(trainerArg);
  try {
    const file = readRunFile(files[0], overrides);
    // A file written for another trainer would be checked against the wrong fields and defaults.
    const named = file.values["trainer"];
    if (named !== undefined && named !== null && trainerName(named) !== trainer) {
      const source = overrides.some((o) => o.trim().startsWith("trainer=")) || files[0] === undefined ? "the trainer=… override" : files[0];
      throw new UsageError(`pbrl config validate: the command line names trainer ${trainer}, but ${source} says trainer: ${trainerName(named)}; run pbrl config validate ${trainerName(named)} …, or change the trainer key`);
    }
    const { config, run } = splitRunFile(file.values, trainer);
    const { args } = buildTrainerConfig(trainer, config);
    io.out(JSON.stringify({ ...run, trainer, ...args }, null, 2) + "\n");
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

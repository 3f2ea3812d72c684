import { ConfigError } from "@pbrl/trainers";
import { UsageError, type CliIO } from "../io.js";
import { buildTrainerConfig, readRunFile, splitRunFile, trainerName } from "../run-config.js";

export const CONFIG_HELP = `pbrl config validate TRAINER [FILE] [key=value …]

Validates a configuration for TRAINER (madpo or madpo_iter) from an optional YAML/JSON FILE plus key=value
overrides, and prints the normalized config as JSON with every default filled in — or every
problem at once (exit code 2).
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
    const { config, run } = splitRunFile(file.values, trainer);
    const { args } = buildTrainerConfig(trainer, config);
    io.out(JSON.stringify({ trainer, ...run, ...args }, null, 2) + "\n");
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

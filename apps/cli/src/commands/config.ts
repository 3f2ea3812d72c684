import { existsSync, readFileSync, statSync } from "node:fs";
import { redactRecord, writeFileAtomic } from "@pbrl/core-tensor";
import * as path from "node:path";
import { ConfigError, TRAINER_CONFIGS, fieldDocs } from "@pbrl/trainers";
import { closest, parseFlagsAndArgs } from "../args.js";
import { configReferenceMarkdown, fieldRows, runFileSchema, runKeyRows, trainersCell } from "../config-docs.js";
import { UsageError, type CliIO } from "../io.js";
import { buildTrainerConfig, readRunFile, splitRunFile, TRAINERS, trainerName, type TrainerName } from "../run-config.js";
import { renderTable } from "../table.js";

/** What each trainer does, in a line (a Record over the names: a new trainer needs one). */
const SUMMARY: Record<TrainerName, string> = {
  madpo: "collect preference pairs once, then train every agent with MADPO",
  madpo_iter: "rounds: pairs against a comparator, then MADPO, with replay",
  marlhf: "collect pairs once, fit a joint reward model, then RL against it",
  marlhf_iter: "rounds: pairs, a fresh reward model, then RL against it",
};

export const CONFIG_HELP = `pbrl config validate TRAINER [FILE] [key=value …]
pbrl config fields [TRAINER] [--json]
pbrl config schema TRAINER [--out FILE]
pbrl config reference [--out FILE]

TRAINER, one of the four trainers (its config):
${TRAINERS.map((t) => `  ${t.padEnd(12)} ${TRAINER_CONFIGS[t].configName.padEnd(17)} ${SUMMARY[t]}`).join("\n")}

validate   checks a configuration for TRAINER from an optional YAML/JSON FILE plus key=value
           overrides, and prints it normalized as JSON with every default filled in and
           secrets redacted (as in config.json) — or every problem at once, unknown keys
           included (exit code 2). A \`trainer:\` key in FILE (or a trainer=… override) must
           name TRAINER.
fields     prints every config field of TRAINER (of all four without it) with its type, default
           and what it does, then the run file's other keys; --json prints them as JSON.
schema     prints a JSON Schema of TRAINER's run file, for editors: save it, e.g. with
           --out madpo_iter.schema.json, and put this first line in the YAML file
           # yaml-language-server: $schema=madpo_iter.schema.json
reference  prints docs/config-reference.md (Markdown) for this version of pbrl.

key=value: a number, true/false, null (or None, or nothing) or a [flow, list] where the key takes
one; otherwise the text as written, so formatters=Text: {txt} is the template "Text: {txt}".
`;

const SUBCOMMANDS = ["validate", "fields", "schema", "reference"] as const;

export async function configCommand(argv: string[], io: CliIO): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case "validate":
      return validate(rest, io);
    case "fields":
      return fields(rest, io);
    case "schema":
      return schema(rest, io);
    case "reference":
      return reference(rest, io);
  }
  const near = sub === undefined ? undefined : closest(sub, SUBCOMMANDS);
  throw new UsageError(
    `pbrl config: ${sub === undefined ? "give a subcommand" : `unknown subcommand "${sub}"${near ? ` (did you mean "${near}"?)` : ""}`}: ${SUBCOMMANDS.join(", ")}; see pbrl config --help`,
  );
}

async function validate(argv: string[], io: CliIO): Promise<number> {
  const [trainerArg, ...rest] = argv;
  if (trainerArg === undefined) throw new UsageError("usage: pbrl config validate TRAINER [FILE] [key=value …]");
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
      throw new UsageError(
        `pbrl config validate: the command line names trainer ${trainer}, but ${source} says trainer: ${trainerName(named)}; run pbrl config validate ${trainerName(named)} …, or change the trainer key`,
      );
    }
    const { config, run } = splitRunFile(file.values, trainer);
    const { args } = buildTrainerConfig(trainer, config);
    // Printed configs are pasted into issues and logs: secrets redacted as in config.json.
    io.out(JSON.stringify(redactRecord({ ...run, trainer, ...args }), null, 2) + "\n");
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
}

function onePositional(positionals: string[], usage: string, optional: boolean): string | undefined {
  if (positionals.length > 1 || (!optional && positionals.length === 0))
    throw new UsageError(`usage: ${usage}${positionals.length > 1 ? `; got ${positionals.join(" ")}` : ""}`);
  return positionals[0];
}

async function fields(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseFlagsAndArgs(argv, { json: { type: "boolean" } }, "config fields");
  const given = onePositional(positionals, "pbrl config fields [TRAINER] [--json]", true);
  const trainers: readonly TrainerName[] = given === undefined ? TRAINERS : [trainerName(given)];
  if (values.json === true) {
    const byTrainer = Object.fromEntries(trainers.map((t) => [t, { configName: TRAINER_CONFIGS[t].configName, fields: fieldDocs(TRAINER_CONFIGS[t].fields) }]));
    io.out(JSON.stringify({ trainers: byTrainer, runKeys: runKeyRows() }, null, 2) + "\n");
    return 0;
  }
  const width = Math.max(80, process.stdout.columns ?? 120);
  const rows = fieldRows(trainers);
  const all = trainers.length > 1;
  const title = all
    ? `Config fields of the four trainers (${rows.length})`
    : `${TRAINER_CONFIGS[trainers[0]!].configName} (trainer ${trainers[0]!}): ${rows.length} fields`;
  const header = all ? ["FIELD", "TRAINERS", "TYPE", "DEFAULT", "DESCRIPTION"] : ["FIELD", "TYPE", "DEFAULT", "DESCRIPTION"];
  const cells = rows.map((r) => (all ? [r.name, trainersCell(r.trainers), r.type, r.default, r.description] : [r.name, r.type, r.default, r.description]));
  const maxWidths = all ? [40, 20, 18, 14] : [40, 20, 14];
  io.out(`${title}\n\n${renderTable(header, cells, { width, maxWidths })}\n`);
  io.out(
    `The run file's other keys\n\n${renderTable(
      ["KEY", "TYPE", "DESCRIPTION"],
      runKeyRows().map((r) => [r.name, r.type, r.description]),
      { width, maxWidths: [40, 20] },
    )}`,
  );
  return 0;
}

/**
 * Prints `text`, or writes it to `out` atomically. An existing file is replaced only when an earlier
 * run of the same command wrote it (`madeByUs` recognises it); any other file is the user's.
 */
async function writeOrPrint(text: string, out: string | undefined, what: string, madeByUs: (existing: string) => boolean, io: CliIO): Promise<number> {
  if (out === undefined) {
    io.out(text);
    return 0;
  }
  const file = path.resolve(out);
  if (existsSync(file)) {
    const existing = statSync(file).isFile() ? readFileSync(file, "utf8") : undefined;
    if (existing === undefined || !madeByUs(existing))
      throw new UsageError(
        `pbrl config: --out ${out} already exists and was not written by this command; it is not replaced. Choose another path, or remove it yourself`,
      );
  }
  await writeFileAtomic(file, text);
  io.err(`${what} written to ${out}\n`);
  return 0;
}

/** A JSON Schema this command wrote: its title names a pbrl run file. */
function isRunFileSchema(text: string): boolean {
  try {
    return /^pbrl \w+ run file$/.test(String((JSON.parse(text) as { title?: unknown }).title));
  } catch {
    return false;
  }
}

async function schema(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseFlagsAndArgs(argv, { out: { type: "string" } }, "config schema");
  const trainer = trainerName(onePositional(positionals, "pbrl config schema TRAINER [--out FILE]", false));
  return writeOrPrint(JSON.stringify(runFileSchema(trainer), null, 2) + "\n", values.out, "JSON Schema", isRunFileSchema, io);
}

async function reference(argv: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseFlagsAndArgs(argv, { out: { type: "string" } }, "config reference");
  if (positionals.length > 0) throw new UsageError(`usage: pbrl config reference [--out FILE]; got ${positionals.join(" ")}`);
  return writeOrPrint(
    configReferenceMarkdown(),
    values.out,
    "configuration reference",
    (t) => t.includes("Generated from the config schemas by `pbrl config reference`"),
    io,
  );
}

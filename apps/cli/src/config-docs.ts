/**
 * What the config fields and run keys are, for people and editors, read from their schemas:
 * `pbrl config fields` (a table), `pbrl config schema` (JSON Schema) and
 * `pbrl config reference` (docs/config-reference.md, which a test keeps current).
 */
import { TRAINER_CONFIGS, configJsonSchema, fieldDocs, type FieldDoc, type JsonSchema } from "@pbrl/trainers";
import { RUN_KEYS, TRAINERS, type TrainerName } from "./run-config.js";
import { RUN_KEY_DOCS } from "./run-keys.js";

/** The command that writes docs/config-reference.md (from the repository root, after a build). */
export const REFERENCE_COMMAND = "pnpm build && node apps/cli/dist/main.js config reference --out docs/config-reference.md";

/** One field across trainers: a cell whose value differs by trainer reads "madpo, marlhf: 20; madpo_iter: 1; …". */
export interface FieldRow {
  name: string;
  trainers: readonly TrainerName[];
  type: string;
  default: string;
  description: string;
}

/** A default as a config file would write it: strings bare (quoted only when empty), the rest as JSON. */
export const showDefault = (v: unknown): string => (typeof v === "string" && v !== "" ? v : JSON.stringify(v));

function merged(values: ReadonlyMap<TrainerName, string>): string {
  const groups = new Map<string, TrainerName[]>();
  for (const [t, v] of values) groups.set(v, [...(groups.get(v) ?? []), t]);
  if (groups.size === 1) return [...groups.keys()][0]!;
  return [...groups].map(([v, ts]) => `${ts.join(", ")}: ${v.replace(/\.$/, "")}`).join("; ");
}

/** The fields of `trainers` in declaration order (the first trainer's first), each once; `value` formats each default. */
export function fieldRows(trainers: readonly TrainerName[], value: (shown: string) => string = (v) => v): FieldRow[] {
  const docs = new Map<string, Map<TrainerName, FieldDoc>>();
  for (const t of trainers) {
    for (const d of fieldDocs(TRAINER_CONFIGS[t].fields)) docs.set(d.name, (docs.get(d.name) ?? new Map<TrainerName, FieldDoc>()).set(t, d));
  }
  return [...docs].map(([name, byTrainer]) => {
    const cell = (f: (d: FieldDoc) => string) => merged(new Map([...byTrainer].map(([t, d]) => [t, f(d)])));
    return {
      name,
      trainers: [...byTrainer.keys()],
      type: cell((d) => d.typeLabel),
      default: cell((d) => value(showDefault(d.default))),
      description: cell((d) => d.description),
    };
  });
}

export interface RunKeyRow {
  name: string;
  type: string;
  description: string;
}

export const runKeyRows = (): RunKeyRow[] =>
  RUN_KEYS.map((name) => ({ name, type: RUN_KEY_DOCS[name]?.typeLabel ?? "", description: RUN_KEY_DOCS[name]?.description ?? "" }));

/** A run file of `trainer` as a JSON Schema: its config fields and the run keys, nothing else. */
export function runFileSchema(trainer: TrainerName): JsonSchema {
  const { configName, fields } = TRAINER_CONFIGS[trainer];
  const extra: Record<string, JsonSchema> = {};
  for (const k of RUN_KEYS) extra[k] = k === "trainer" ? { ...RUN_KEY_DOCS[k]?.jsonSchema, enum: [trainer] } : (RUN_KEY_DOCS[k]?.jsonSchema ?? {});
  return configJsonSchema(fields, {
    title: `pbrl ${trainer} run file`,
    description: `A run file of pbrl train with trainer: ${trainer}: the run keys and ${configName}'s fields (pbrl config fields ${trainer} lists them).`,
    extra,
  });
}

/** A list of trainers as the table's TRAINERS cell says it. */
export const trainersCell = (ts: readonly TrainerName[]) => (ts.length === TRAINERS.length ? "all" : ts.join(", "));

const md = (s: string) => s.replace(/\|/g, "\\|");
const code = (s: string) => `\`${s}\``;

/** docs/config-reference.md. */
export function configReferenceMarkdown(): string {
  const trainers = TRAINERS.map((t) => `\`${t}\` (${TRAINER_CONFIGS[t].configName})`).join(", ");
  const lines = [
    "# Configuration reference",
    "",
    `<!-- Generated from the config schemas by \`pbrl config reference\`; do not edit. Regenerate: ${REFERENCE_COMMAND} -->`,
    "",
    `Every key of a run file (\`pbrl train --config FILE\`) and of \`key=value\` overrides, for the four trainers: ${trainers}. ` +
      "Field names and defaults follow CoMLRL's; a few fields are pbrl's own or TRL's (seed, output_dir, backend, bf16, report_to, …). " +
      "`pbrl config fields TRAINER` prints one trainer's table in a terminal; `pbrl config schema TRAINER` writes a JSON Schema for editors; " +
      "`pbrl config validate TRAINER FILE` checks a file and prints it with every default filled in.",
    "",
    "A `key=value` override is read as its key accepts: numbers, `true`/`false`, `null` (also `None` or nothing) and `[flow, lists]` where the key takes them, " +
      "and otherwise the text exactly as given, so `formatters=Text: {txt}` is the template `Text: {txt}`.",
    "",
    "## Run keys",
    "",
    "| key | type | description |",
    "|---|---|---|",
    ...runKeyRows().map((r) => `| ${code(r.name)} | ${md(r.type)} | ${md(r.description)} |`),
    "",
    "## Config fields",
    "",
    "A cell that differs by trainer lists each value with its trainers.",
    "",
    "| field | trainers | type | default | description |",
    "|---|---|---|---|---|",
    ...fieldRows(TRAINERS, code).map((r) => `| ${code(r.name)} | ${trainersCell(r.trainers)} | ${md(r.type)} | ${md(r.default)} | ${md(r.description)} |`),
    "",
    "## Aliases",
    "",
    "Choice fields are trimmed and lower-cased, and accept these other spellings:",
    "",
    "| field | alias → name |",
    "|---|---|",
    ...aliasRows().map(([name, aliases]) => `| ${code(name)} | ${md(aliases)} |`),
    "",
  ];
  return lines.join("\n");
}

function aliasRows(): [string, string][] {
  const seen = new Map<string, string>();
  for (const t of TRAINERS) {
    for (const d of fieldDocs(TRAINER_CONFIGS[t].fields)) {
      if (d.aliases !== undefined && !seen.has(d.name))
        seen.set(
          d.name,
          Object.entries(d.aliases)
            .map(([a, n]) => `${a} → ${n}`)
            .join(", "),
        );
    }
  }
  return [...seen];
}

/**
 * The keys of a run file besides the trainer's config fields: what each accepts (a test of the
 * value, which decides how a key=value override is read, and its JSON Schema) and what it does
 * (for `pbrl config fields`, `pbrl config schema` and docs/config-reference.md). run-config.ts's
 * RUN_KEYS decides which keys exist; a test checks that each is described here.
 */
import type { JsonSchema } from "@pbrl/trainers";

export interface RunKeyDoc {
  /** Whether a value has the right shape (the run checks the rest: files exist, modules load). */
  accepts: (value: unknown) => boolean;
  jsonSchema: JsonSchema;
  /** The type in short, as the config fields' tables show it. */
  typeLabel: string;
  description: string;
}

const isPath = (v: unknown): v is string => typeof v === "string" && v !== "";
const isPathList = (v: unknown) => Array.isArray(v) && v.length > 0 && v.every(isPath);
const PATH: JsonSchema = { type: "string", minLength: 1 };
const PATH_LIST: JsonSchema = { type: "array", items: PATH, minItems: 1 };
const NULL: JsonSchema = { type: "null" };

function key(typeLabel: string, description: string, accepts: (v: unknown) => boolean, jsonSchema: JsonSchema): RunKeyDoc {
  return { accepts, jsonSchema: { description, ...jsonSchema }, typeLabel, description };
}

const optionalPath = (v: unknown) => v === null || isPath(v);

/** The split, subset and revision keys of a dataset key (a hub dataset or a dataset folder). */
function datasetKeys(dataset: string, defaultSplit: string): Record<string, RunKeyDoc> {
  const optional = { anyOf: [PATH, NULL] };
  return {
    [`${dataset}_split`]: key("string | null", `Split of ${dataset} read from a hub dataset or folder; null: ${defaultSplit}.`, optionalPath, optional),
    [`${dataset}_config`]: key("string | null", `Subset (config name) of the ${dataset} hub dataset or folder; null: the default one.`, optionalPath, optional),
    [`${dataset}_revision`]: key("string | null", `Branch, tag or commit of the ${dataset} hub dataset; null: main.`, optionalPath, optional),
  };
}

export const RUN_KEY_DOCS: Record<string, RunKeyDoc> = {
  trainer: key(
    "madpo | madpo_iter | marlhf | marlhf_iter",
    "Which trainer runs, and so which config fields the file may set (pbrl train's default: madpo).",
    isPath,
    PATH,
  ),
  agent_model: key("string | null", "One checkpoint folder or hub id that every agent starts from (or give agents).", optionalPath, { anyOf: [PATH, NULL] }),
  agents: key("string[] | null", "One checkpoint folder or hub id per agent (instead of agent_model).", (v) => v === null || isPathList(v), {
    anyOf: [PATH_LIST, NULL],
  }),
  train_dataset: key(
    "string",
    "Task items: a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name (relative paths start at the run file's folder).",
    isPath,
    PATH,
  ),
  eval_dataset: key("string | null", "The same, for evaluation.", optionalPath, { anyOf: [PATH, NULL] }),
  ...datasetKeys("train_dataset", "train"),
  ...datasetKeys("eval_dataset", "test"),
  formatters: key(
    "string | string[] | null",
    "A prompt template with {field} placeholders, a list of them (one per agent), or a .mjs module exporting formatters.",
    (v) => optionalPath(v) || isPathList(v),
    { anyOf: [PATH, PATH_LIST, NULL] },
  ),
  reward_func: key(
    "string",
    "A built-in task name (summary_expansion) or a .mjs module exporting reward_func (and optionally reward_processor).",
    isPath,
    PATH,
  ),
  reward_processor: key("string | null", "A .mjs module exporting reward_processor, which maps each reward.", optionalPath, { anyOf: [PATH, NULL] }),
};

/**
 * The run file of `pbrl train`: a YAML or JSON object holding the trainer name, the agents, the
 * data, the formatters, the reward, and any config field of the trainer, all at top level, with
 * `key=value` overrides from the command line (values are YAML scalars or flow lists).
 */
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import {
  ConfigError,
  closestName,
  MADPO_FIELDS,
  MADPO_ITER_FIELDS,
  MADPOConfig,
  MADPOIterConfig,
  MARLHF_FIELDS,
  MARLHF_ITER_FIELDS,
  MARLHFConfig,
  MARLHFIterConfig,
  type Formatter,
  type MADPOConfigInput,
  type MADPOIterConfigInput,
  type MARLHFConfigInput,
  type MARLHFIterConfigInput,
  type RewardFunc,
  type RewardProcessor,
  type TaskItem,
} from "@pbrl/trainers";
import YAML from "yaml";
import { BUILTIN_TASKS } from "./builtins.js";
import { UsageError } from "./io.js";

export const TRAINERS = ["madpo", "madpo_iter", "marlhf", "marlhf_iter"] as const;
export type TrainerName = (typeof TRAINERS)[number];

/** Keys of a run file besides the trainer's config fields. */
const RUN_KEYS = ["trainer", "agent_model", "agents", "train_dataset", "eval_dataset", "formatters", "reward_func", "reward_processor"] as const;

export interface RunFile {
  /** The merged values; paths in them are absolute (see `absolutizePaths`). */
  values: Record<string, unknown>;
}

const isModulePath = (s: string) => /\.(m?js|cjs)$/.test(s);

/**
 * Makes the path-valued keys absolute: paths written in a file are relative to the file's
 * folder, paths given as key=value relative to the current directory. Built-in reward names and
 * hub ids ("org/name" that is not an existing path) are left alone.
 */
function absolutizePaths(values: Record<string, unknown>, baseDir: string): void {
  const abs = (p: string) => (path.isAbsolute(p) ? p : path.resolve(baseDir, p));
  const maybeLocal = (p: string) => (p.startsWith(".") || p.startsWith("/") || existsSync(abs(p)) ? abs(p) : p);
  for (const key of ["output_dir", "train_dataset", "eval_dataset"]) if (typeof values[key] === "string") values[key] = abs(values[key] as string);
  for (const key of ["reward_func", "reward_processor", "formatters"]) if (typeof values[key] === "string" && isModulePath(values[key] as string)) values[key] = abs(values[key] as string);
  if (typeof values["agent_model"] === "string") values["agent_model"] = maybeLocal(values["agent_model"]);
  if (Array.isArray(values["agents"])) values["agents"] = values["agents"].map((a) => (typeof a === "string" ? maybeLocal(a) : a));
}

/** Reads a YAML/JSON run file (optional) and applies key=value overrides on top. */
export function readRunFile(file: string | undefined, overrides: readonly string[]): RunFile {
  let values: Record<string, unknown> = {};
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new UsageError(`cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (err as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = YAML.parse(text);
    } catch (err) {
      throw new UsageError(`config file ${file} is not valid YAML/JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new UsageError(`config file ${file} must hold a mapping of keys to values`);
    values = parsed as Record<string, unknown>;
    absolutizePaths(values, path.dirname(path.resolve(file)));
  }
  const given: Record<string, unknown> = {};
  for (const o of overrides) {
    const eq = o.indexOf("=");
    if (eq <= 0) throw new UsageError(`override ${JSON.stringify(o)} is not of the form key=value`);
    const key = o.slice(0, eq).trim();
    const raw = o.slice(eq + 1);
    let value: unknown;
    try {
      value = YAML.parse(raw);
    } catch {
      value = raw;
    }
    // An empty value or "None" (Python spelling) means null, as in the seed's key=value examples.
    given[key] = raw === "" || raw === "None" ? null : value;
  }
  absolutizePaths(given, process.cwd());
  return { values: { ...values, ...given } };
}

/** Splits a run file into the trainer's config fields and the run keys; unknown keys are errors. */
export function splitRunFile(values: Record<string, unknown>, trainer: TrainerName): { config: Record<string, unknown>; run: Record<string, unknown> } {
  const fields = Object.keys({ madpo: MADPO_FIELDS, madpo_iter: MADPO_ITER_FIELDS, marlhf: MARLHF_FIELDS, marlhf_iter: MARLHF_ITER_FIELDS }[trainer]);
  const config: Record<string, unknown> = {};
  const run: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(values)) {
    if ((RUN_KEYS as readonly string[]).includes(k)) run[k] = v;
    else if (fields.includes(k)) config[k] = v;
    else {
      const near = closestName(k, [...fields, ...RUN_KEYS]);
      unknown.push(`${k}: unknown key for trainer ${trainer}${near ? ` (did you mean "${near}"?)` : ""}`);
    }
  }
  if (unknown.length > 0) throw new ConfigError(`${trainer} run configuration`, unknown);
  return { config, run };
}

export function trainerName(value: unknown): TrainerName {
  const name = typeof value === "string" ? value.trim().toLowerCase() : value;
  if (!(TRAINERS as readonly unknown[]).includes(name)) {
    throw new UsageError(`trainer: got ${JSON.stringify(value)}; this version of pbrl has ${TRAINERS.map((t) => JSON.stringify(t)).join(", ")}`);
  }
  return name as TrainerName;
}

export type TrainerConfig =
  | { trainer: "madpo"; args: MADPOConfig }
  | { trainer: "madpo_iter"; args: MADPOIterConfig }
  | { trainer: "marlhf"; args: MARLHFConfig }
  | { trainer: "marlhf_iter"; args: MARLHFIterConfig };

export function buildTrainerConfig(trainer: TrainerName, config: Record<string, unknown>): TrainerConfig {
  switch (trainer) {
    case "madpo":
      return { trainer, args: MADPOConfig(config as MADPOConfigInput) };
    case "madpo_iter":
      return { trainer, args: MADPOIterConfig(config as MADPOIterConfigInput) };
    case "marlhf":
      return { trainer, args: MARLHFConfig(config as MARLHFConfigInput) };
    case "marlhf_iter":
      return { trainer, args: MARLHFIterConfig(config as MARLHFIterConfigInput) };
  }
}

/** A dataset file: JSONL (one object per line) or JSON (an array of objects). */
export function readDataset(file: string, key: string): TaskItem[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(`${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (err as Error).message}`);
  }
  const items: unknown[] = [];
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    try {
      items.push(...(JSON.parse(trimmed) as unknown[]));
    } catch (err) {
      throw new UsageError(`${key}: ${file} is not valid JSON: ${(err as Error).message}`);
    }
  } else {
    trimmed.split("\n").forEach((line, i) => {
      if (line.trim() === "") return;
      try {
        items.push(JSON.parse(line));
      } catch (err) {
        throw new UsageError(`${key}: ${file} line ${i + 1} is not valid JSON: ${(err as Error).message}`);
      }
    });
  }
  items.forEach((it, i) => {
    if (it === null || typeof it !== "object" || Array.isArray(it)) throw new UsageError(`${key}: item ${i} of ${file} is not a JSON object`);
  });
  return items as TaskItem[];
}

/** A `{field}` template as a formatter; `{{` and `}}` are literal braces. */
export function templateFormatter(template: string): Formatter {
  return (item) =>
    template.replace(/\{\{|\}\}|\{([^{}]+)\}/g, (m, field: string | undefined) => {
      if (m === "{{") return "{";
      if (m === "}}") return "}";
      const v = item[field!.trim()];
      if (v === undefined) throw new UsageError(`formatter template ${JSON.stringify(template)} uses {${field}}, which item ${JSON.stringify(item["id"] ?? "")} does not have (fields: ${Object.keys(item).join(", ")})`);
      return typeof v === "string" ? v : JSON.stringify(v);
    });
}

async function importModule(file: string, key: string): Promise<Record<string, unknown>> {
  if (!existsSync(file)) throw new UsageError(`${key}: module ${file} not found`);
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

export interface ResolvedRun {
  agentModel?: string;
  agents?: string[];
  trainDataset: TaskItem[];
  evalDataset?: TaskItem[];
  formatters?: Formatter | Formatter[];
  rewardFunc: RewardFunc;
  rewardProcessor?: RewardProcessor;
}

/** Turns the run keys into what the trainer takes: loaded data, formatters and reward. */
export async function resolveRun(run: Record<string, unknown>): Promise<ResolvedRun> {
  const str = (key: string): string | undefined => {
    const v = run[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string" || v === "") throw new UsageError(`${key}: expected a string, got ${JSON.stringify(v)}`);
    return v;
  };
  // reward_func: a built-in task name or a module exporting reward_func (and optionally reward_processor)
  const rewardSpec = str("reward_func");
  if (rewardSpec === undefined) throw new UsageError(`reward_func is required: a built-in name (${Object.keys(BUILTIN_TASKS).join(", ")}) or a module path exporting reward_func`);
  let rewardFunc: RewardFunc;
  let rewardProcessor: RewardProcessor | undefined;
  let builtinFormatters: Formatter[] | undefined;
  let builtinData: { train: TaskItem[]; eval: TaskItem[] } | undefined;
  if (isModulePath(rewardSpec)) {
    const mod = await importModule(rewardSpec, "reward_func");
    const f = mod["reward_func"] ?? mod["default"];
    if (typeof f !== "function") throw new UsageError(`reward_func: ${rewardSpec} exports no function named reward_func (or a default export)`);
    rewardFunc = f as RewardFunc;
    if (typeof mod["reward_processor"] === "function") rewardProcessor = mod["reward_processor"] as RewardProcessor;
  } else {
    const task = BUILTIN_TASKS[rewardSpec];
    if (task === undefined) {
      const near = closestName(rewardSpec, Object.keys(BUILTIN_TASKS));
      throw new UsageError(`reward_func: no built-in named ${JSON.stringify(rewardSpec)}${near ? ` (did you mean "${near}"?)` : ""}; built-ins: ${Object.keys(BUILTIN_TASKS).join(", ")}; or give a module path (.js/.mjs)`);
    }
    rewardFunc = task.rewardFunc;
    builtinFormatters = task.formatters;
    builtinData = task.load();
  }
  const procSpec = str("reward_processor");
  if (procSpec !== undefined) {
    const mod = await importModule(procSpec, "reward_processor");
    const f = mod["reward_processor"] ?? mod["default"];
    if (typeof f !== "function") throw new UsageError(`reward_processor: ${procSpec} exports no function named reward_processor (or a default export)`);
    rewardProcessor = f as RewardProcessor;
  }

  // formatters: a template, a list of templates, or a module exporting formatters
  let formatters: Formatter | Formatter[] | undefined = builtinFormatters;
  const fSpec = run["formatters"];
  if (typeof fSpec === "string" && isModulePath(fSpec)) {
    const mod = await importModule(fSpec, "formatters");
    const f = mod["formatters"] ?? mod["default"];
    if (typeof f !== "function" && !(Array.isArray(f) && f.every((x) => typeof x === "function"))) throw new UsageError(`formatters: ${fSpec} exports no function or list of functions named formatters`);
    formatters = f as Formatter | Formatter[];
  } else if (typeof fSpec === "string") {
    formatters = templateFormatter(fSpec);
  } else if (Array.isArray(fSpec) && fSpec.every((x) => typeof x === "string")) {
    formatters = (fSpec as string[]).map(templateFormatter);
  } else if (fSpec !== undefined && fSpec !== null) {
    throw new UsageError(`formatters: expected a template string, a list of templates, or a module path; got ${JSON.stringify(fSpec)}`);
  }

  const trainPath = str("train_dataset");
  const evalPath = str("eval_dataset");
  const trainDataset = trainPath !== undefined ? readDataset(trainPath, "train_dataset") : builtinData?.train;
  if (trainDataset === undefined) throw new UsageError("train_dataset is required (a JSONL or JSON file)");
  const evalDataset = evalPath !== undefined ? readDataset(evalPath, "eval_dataset") : trainPath === undefined ? builtinData?.eval : undefined;

  const agentModel = str("agent_model");
  const agentsRaw = run["agents"];
  if (agentsRaw !== undefined && agentsRaw !== null && !(Array.isArray(agentsRaw) && agentsRaw.every((a) => typeof a === "string" && a !== ""))) {
    throw new UsageError(`agents: expected a list of checkpoint folders or hub ids, got ${JSON.stringify(agentsRaw)}`);
  }
  const out: ResolvedRun = { trainDataset, rewardFunc };
  if (agentModel !== undefined) out.agentModel = agentModel;
  if (Array.isArray(agentsRaw)) out.agents = agentsRaw as string[];
  if (out.agentModel === undefined && out.agents === undefined) throw new UsageError("give agent_model (one checkpoint for every agent) or agents (one per agent)");
  if (evalDataset !== undefined) out.evalDataset = evalDataset;
  if (formatters !== undefined) out.formatters = formatters;
  if (rewardProcessor !== undefined) out.rewardProcessor = rewardProcessor;
  return out;
}

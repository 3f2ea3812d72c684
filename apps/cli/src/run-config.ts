/**
 * The run file of `pbrl train`: a YAML or JSON object holding the trainer name, the agents, the
 * data, the formatters, the reward, and any config field of the trainer, all at top level, with
 * `key=value` overrides from the command line (read as the key's schema says: overrides.ts).
 */
import { existsSync } from "node:fs";
import * as path from "node:path";
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
import type { AsyncFormatter } from "@pbrl/preference-data";
import YAML from "yaml";
import { BUILTIN_TASKS } from "./builtins.js";
import { DATASET_RUN_KEYS, datasetRequest, datasetSourceForRun, loadRunDataset } from "./dataset-sources.js";
import { UsageError } from "./io.js";
import { overrideValue, splitOverride } from "./overrides.js";
import { startWorkerRewards } from "./reward/worker-rewards.js";
import { readUtf8File } from "./text-file.js";

export const TRAINERS = ["madpo", "madpo_iter", "marlhf", "marlhf_iter"] as const;
export type TrainerName = (typeof TRAINERS)[number];

/** Keys of a run file besides the trainer's config fields (run-keys.ts describes each). */
export const RUN_KEYS = [
  "trainer",
  "agent_model",
  "agents",
  "train_dataset",
  "eval_dataset",
  ...DATASET_RUN_KEYS,
  "formatters",
  "reward_func",
  "reward_processor",
] as const;

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
  if (typeof values["output_dir"] === "string") values["output_dir"] = abs(values["output_dir"]);
  for (const key of ["train_dataset", "eval_dataset"]) if (typeof values[key] === "string") values[key] = datasetSourceForRun(values[key] as string, baseDir);
  for (const key of ["reward_func", "reward_processor", "formatters"])
    if (typeof values[key] === "string" && isModulePath(values[key] as string)) values[key] = abs(values[key] as string);
  if (typeof values["agent_model"] === "string") values["agent_model"] = maybeLocal(values["agent_model"]);
  if (Array.isArray(values["agents"])) values["agents"] = values["agents"].map((a) => (typeof a === "string" ? maybeLocal(a) : a));
}

/** Reads a YAML/JSON run file (optional) and applies key=value overrides on top. */
export function readRunFile(file: string | undefined, overrides: readonly string[]): RunFile {
  let values: Record<string, unknown> = {};
  if (file !== undefined) {
    const text = readUtf8File(file, "config file");
    let parsed: unknown;
    try {
      parsed = YAML.parse(text);
    } catch (err) {
      throw new UsageError(`config file ${file} is not valid YAML/JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
      throw new UsageError(`config file ${file} must hold a mapping of keys to values`);
    values = parsed as Record<string, unknown>;
    absolutizePaths(values, path.dirname(path.resolve(file)));
  }
  const given: Record<string, unknown> = {};
  for (const o of overrides) {
    const kv = splitOverride(o);
    if (kv === undefined) throw new UsageError(`override ${JSON.stringify(o)} is not of the form key=value`);
    given[kv.key] = overrideValue(kv.key, kv.raw);
  }
  absolutizePaths(given, process.cwd());
  return { values: { ...values, ...given } };
}

const TRAINER_FIELDS = { madpo: MADPO_FIELDS, madpo_iter: MADPO_ITER_FIELDS, marlhf: MARLHF_FIELDS, marlhf_iter: MARLHF_ITER_FIELDS } as const;

/**
 * Splits a run file into the trainer's config and the run keys. Unknown keys stay in `config`:
 * buildTrainerConfig reports them together with every other problem, rather than alone first
 * (so the split no longer depends on the trainer; the parameter stays for the callers).
 */
export function splitRunFile(values: Record<string, unknown>, _trainer: TrainerName): { config: Record<string, unknown>; run: Record<string, unknown> } {
  const config: Record<string, unknown> = {};
  const run: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    if ((RUN_KEYS as readonly string[]).includes(k)) run[k] = v;
    else config[k] = v;
  }
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

/** Builds the trainer's config; unknown keys (named with the closest key) and every field's and rule's problem, all in one ConfigError. */
export function buildTrainerConfig(trainer: TrainerName, config: Record<string, unknown>): TrainerConfig {
  const fields = TRAINER_FIELDS[trainer];
  const known: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (Object.hasOwn(fields, k)) {
      known[k] = v;
      continue;
    }
    const near = closestName(k, [...Object.keys(fields), ...RUN_KEYS]);
    unknown.push(`${k}: unknown key for trainer ${trainer}${near ? ` (did you mean "${near}"?)` : ""}`);
  }
  let built: TrainerConfig;
  try {
    built = buildKnown(trainer, known);
  } catch (e) {
    if (e instanceof ConfigError && unknown.length > 0) throw new ConfigError(`${trainer} run configuration`, [...unknown, ...e.problems]);
    throw e;
  }
  if (unknown.length > 0) throw new ConfigError(`${trainer} run configuration`, unknown);
  return built;
}

function buildKnown(trainer: TrainerName, config: Record<string, unknown>): TrainerConfig {
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

/** A `{field}` template as a formatter; `{{` and `}}` are literal braces. */
export function templateFormatter(template: string): Formatter {
  return (item) =>
    template.replace(/\{\{|\}\}|\{([^{}]+)\}/g, (m, field: string | undefined) => {
      if (m === "{{") return "{";
      if (m === "}}") return "}";
      const v = item[field!.trim()];
      if (v === undefined)
        throw new UsageError(
          `formatter template ${JSON.stringify(template)} uses {${field}}, which item ${JSON.stringify(item["id"] ?? "")} does not have (fields: ${Object.keys(item).join(", ")})`,
        );
      return typeof v === "string" ? v : JSON.stringify(v);
    });
}

export interface ResolvedRun {
  agentModel?: string;
  agents?: string[];
  trainDataset: TaskItem[];
  evalDataset?: TaskItem[];
  /** A formatters module's run in the reward worker thread (so they answer asynchronously). */
  formatters?: AsyncFormatter | AsyncFormatter[];
  /** Left out only when people label the rounds (ResolveOptions.rewardOptional). */
  rewardFunc?: RewardFunc;
  rewardProcessor?: RewardProcessor;
  /**
   * The run's local input files and folders by setting name (datasets, reward and formatter
   * modules): the trainer refuses an output_dir that is, holds or lies inside one of them.
   */
  inputPaths: Record<string, string>;
  /** Releases what the run holds (the reward worker thread); call it however the run ends. */
  close: () => Promise<void>;
}

export interface ResolveOptions {
  /** reward_timeout_s of the trainer's config: how long one call of a reward module may take. */
  rewardTimeoutS: number | null;
  /** Where dataset downloads and cache fallbacks are reported (default: stderr). */
  log?: (line: string) => void;
  /** preference_labeler="human": people label the rounds, so reward_func may be left out. */
  rewardOptional?: boolean;
}

/**
 * Turns the run keys into what the trainer takes: loaded data, formatters and reward. Modules
 * (reward_func, reward_processor or formatters given as a module path) run in a worker thread
 * (reward/), started last, once everything else has been checked; built-in rewards and formatter
 * templates run here.
 */
export async function resolveRun(run: Record<string, unknown>, options: ResolveOptions): Promise<ResolvedRun> {
  const str = (key: string): string | undefined => {
    const v = run[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string" || v === "") throw new UsageError(`${key}: expected a string, got ${JSON.stringify(v)}`);
    return v;
  };
  // reward_func: a built-in task name or a module exporting reward_func (and optionally reward_processor)
  const rewardSpec = str("reward_func");
  const noReward = rewardSpec === undefined;
  if (noReward && options.rewardOptional !== true)
    throw new UsageError(
      `reward_func is required: a built-in name (${Object.keys(BUILTIN_TASKS).join(", ")}) or a module path exporting reward_func (it may be left out only with preference_labeler=human)`,
    );
  const rewardModule = rewardSpec !== undefined && isModulePath(rewardSpec) ? rewardSpec : undefined;
  const task = rewardModule === undefined && rewardSpec !== undefined ? BUILTIN_TASKS[rewardSpec] : undefined;
  if (rewardModule !== undefined && !existsSync(rewardModule)) throw new UsageError(`reward_func: module ${rewardModule} not found`);
  if (rewardSpec !== undefined && rewardModule === undefined && task === undefined) {
    const near = closestName(rewardSpec, Object.keys(BUILTIN_TASKS));
    throw new UsageError(
      `reward_func: no built-in named ${JSON.stringify(rewardSpec)}${near ? ` (did you mean "${near}"?)` : ""}; built-ins: ${Object.keys(BUILTIN_TASKS).join(", ")}; or give a module path (.js/.mjs)`,
    );
  }
  const builtinData = task?.load();
  const processorModule = str("reward_processor");
  if (processorModule !== undefined && !existsSync(processorModule)) throw new UsageError(`reward_processor: module ${processorModule} not found`);
  if (processorModule !== undefined && noReward) throw new UsageError("reward_processor: processes reward_func's values, and no reward_func is given");
  // formatters: a template, a list of templates, or a module exporting formatters (run in the worker)
  let formatters: AsyncFormatter | AsyncFormatter[] | undefined = task?.formatters;
  const fSpec = run["formatters"];
  const formattersModule = typeof fSpec === "string" && isModulePath(fSpec) ? fSpec : undefined;
  if (formattersModule !== undefined) {
    if (!existsSync(formattersModule)) throw new UsageError(`formatters: module ${formattersModule} not found`);
  } else if (typeof fSpec === "string") {
    formatters = templateFormatter(fSpec);
  } else if (Array.isArray(fSpec) && fSpec.every((x) => typeof x === "string")) {
    formatters = (fSpec as string[]).map(templateFormatter);
  } else if (fSpec !== undefined && fSpec !== null) {
    throw new UsageError(`formatters: expected a template string, a list of templates, or a module path; got ${JSON.stringify(fSpec)}`);
  }
  // Datasets: files, folders or hub ids with their split/config/revision keys (dataset-sources.ts).
  const trainReq = datasetRequest(run, "train_dataset");
  const evalReq = datasetRequest(run, "eval_dataset");
  const log = options.log !== undefined ? { log: options.log } : {};
  const trainDataset = trainReq !== undefined ? await loadRunDataset(trainReq, log) : builtinData?.train;
  if (trainDataset === undefined)
    throw new UsageError(
      "train_dataset is required: a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name (see docs/datasets.md)",
    );
  const evalDataset = evalReq !== undefined ? await loadRunDataset(evalReq, log) : trainReq === undefined ? builtinData?.eval : undefined;
  const agentModel = str("agent_model");
  const agentsRaw = run["agents"];
  if (agentsRaw !== undefined && agentsRaw !== null && !(Array.isArray(agentsRaw) && agentsRaw.every((a) => typeof a === "string" && a !== ""))) {
    throw new UsageError(`agents: expected a list of checkpoint folders or hub ids, got ${JSON.stringify(agentsRaw)}`);
  }
  if (agentModel === undefined && !Array.isArray(agentsRaw))
    throw new UsageError("give agent_model (one checkpoint for every agent) or agents (one per agent)");
  // Last: once started, the worker must be closed, and nothing else can fail before the trainer owns it.
  const inWorker = rewardModule !== undefined || processorModule !== undefined || formattersModule !== undefined;
  const reward = inWorker
    ? await startWorkerRewards({
        ...(rewardModule !== undefined ? { rewardModule } : task !== undefined ? { builtin: task.rewardFunc } : {}),
        ...(processorModule !== undefined ? { processorModule } : {}),
        ...(formattersModule !== undefined ? { formattersModule } : {}),
        timeoutS: options.rewardTimeoutS,
      })
    : { rewardFunc: task?.rewardFunc, rewardProcessor: undefined, formatters: undefined, close: async () => {} };
  formatters = reward.formatters ?? formatters;
  const local = (key: string, p: string | undefined): [string, string][] => (p !== undefined && existsSync(p) ? [[key, path.resolve(p)]] : []);
  const inputPaths = Object.fromEntries([
    ...local("train_dataset", trainReq?.source),
    ...local("eval_dataset", evalReq?.source),
    ...local("reward_func", rewardModule),
    ...local("reward_processor", processorModule),
    ...local("formatters", formattersModule),
  ]);
  const out: ResolvedRun = { trainDataset, inputPaths, close: reward.close };
  // a worker started for a formatters module alone has no reward to call
  if (!noReward && reward.rewardFunc !== undefined) out.rewardFunc = reward.rewardFunc;
  if (reward.rewardProcessor !== undefined) out.rewardProcessor = reward.rewardProcessor;
  if (agentModel !== undefined) out.agentModel = agentModel;
  if (Array.isArray(agentsRaw)) out.agents = agentsRaw as string[];
  if (evalDataset !== undefined) out.evalDataset = evalDataset;
  if (formatters !== undefined) out.formatters = formatters;
  return out;
}

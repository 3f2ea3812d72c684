/**
 * Where `pbrl train` gets its data (train_dataset, eval_dataset): a local file chosen by
 * extension (.jsonl, .json, .csv, .parquet), a local dataset folder, or a Hugging Face hub
 * dataset id "org/name" with its split, subset and revision in separate run keys, as TRL users
 * write load_dataset("org/name", "subset", split="train"). See docs/datasets.md.
 */
import { existsSync, statSync } from "node:fs";
import * as path from "node:path";
import type { TaskItem } from "@pbrl/trainers";
import { HUB_ID } from "@pbrl/models";
import { DatasetSourceError } from "./errors.js";
import { DATA_EXTENSIONS, readDataFile } from "./formats.js";
import { folderDatasetFiles, hubDatasetFiles } from "./hub.js";

export { DatasetSourceError } from "./errors.js";
export { parseCsv, csvRows, CsvSyntaxError } from "./csv.js";

export type DatasetKey = "train_dataset" | "eval_dataset";

/** Run keys beside train_dataset/eval_dataset: which split, subset and revision of a hub dataset or folder. */
export const DATASET_RUN_KEYS = [
  "train_dataset_split",
  "train_dataset_config",
  "train_dataset_revision",
  "eval_dataset_split",
  "eval_dataset_config",
  "eval_dataset_revision",
] as const;

/** The split read when none is given: "train" for training, "test" for evaluation (TRL's dataset_train_split/dataset_test_split defaults). */
export const DEFAULT_SPLIT: Readonly<Record<DatasetKey, string>> = { train_dataset: "train", eval_dataset: "test" };

export interface DatasetRequest {
  key: DatasetKey;
  /** A file or folder path, or a hub id. */
  source: string;
  split?: string;
  config?: string;
  revision?: string;
}

export interface LoadOptions {
  /** Where download progress and cache fallbacks are reported; default: stderr. */
  log?: (line: string) => void;
}

const hasDataExtension = (p: string) => path.extname(p).toLowerCase() in DATA_EXTENSIONS;

/**
 * A train_dataset/eval_dataset value as a run file holds it: paths absolute (relative ones
 * resolved against `baseDir`), hub ids ("org/name" that is not a local path and has no data
 * file extension) and URLs left as written.
 */
export function datasetSourceForRun(value: string, baseDir: string): string {
  if (path.isAbsolute(value) || /^[a-z][\w+.-]*:\/\//i.test(value)) return value;
  const abs = path.resolve(baseDir, value);
  if (value.startsWith(".") || existsSync(abs) || hasDataExtension(value) || !HUB_ID.test(value)) return abs;
  return value;
}

/** The request for `key` from a run's keys, or undefined when `key` is not set; bad values are errors. */
export function datasetRequest(run: Readonly<Record<string, unknown>>, key: DatasetKey): DatasetRequest | undefined {
  const str = (k: string): string | undefined => {
    const v = run[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string" || v.trim() === "") throw new DatasetSourceError(`${k}: expected a non-empty string, got ${JSON.stringify(v)}`);
    return v.trim();
  };
  const source = str(key);
  const extra = { split: str(`${key}_split`), config: str(`${key}_config`), revision: str(`${key}_revision`) };
  if (source === undefined) {
    const set = Object.entries(extra).find(([, v]) => v !== undefined);
    if (set !== undefined) throw new DatasetSourceError(`${key}_${set[0]} is set but ${key} is not; set ${key} (a hub id like org/name, or a dataset folder)`);
    return undefined;
  }
  return {
    key,
    source,
    ...(extra.split !== undefined ? { split: extra.split } : {}),
    ...(extra.config !== undefined ? { config: extra.config } : {}),
    ...(extra.revision !== undefined ? { revision: extra.revision } : {}),
  };
}

/** The items of a dataset: a file, a dataset folder, or a hub dataset's split. */
export async function loadDataset(req: DatasetRequest, options: LoadOptions = {}): Promise<TaskItem[]> {
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const { key, source } = req;
  const split = { key, split: req.split ?? DEFAULT_SPLIT[key], config: req.config };
  if (/^hf:\/\//i.test(source)) {
    const id = source.replace(/^hf:\/\/(datasets\/)?/i, "").replace(/@.*$/, "");
    throw new DatasetSourceError(
      `${key}: write a hub dataset as its id, ${JSON.stringify(id)}, with the split in ${key}_split (and a revision in ${key}_revision), not as an hf:// URL`,
    );
  }
  let files: string[];
  if (existsSync(source) && statSync(source).isDirectory()) {
    if (req.revision !== undefined) throw new DatasetSourceError(`${key}_revision applies to hub datasets; ${source} is a local folder`);
    files = await folderDatasetFiles(source, split);
  } else if (existsSync(source) || hasDataExtension(source) || !HUB_ID.test(source)) {
    if (!existsSync(source)) {
      const hubHint = HUB_ID.test(source) || !/[:]/.test(source) ? "" : ` (a hub dataset is written org/name, with the split in ${key}_split)`;
      throw new DatasetSourceError(
        `${key}: ${source} not found: give a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name${hubHint}`,
      );
    }
    const extra = (["split", "config", "revision"] as const).find((k) => req[k] !== undefined);
    if (extra !== undefined)
      throw new DatasetSourceError(`${key}_${extra} applies to hub datasets and dataset folders; ${source} is a single file (leave ${key}_${extra} unset)`);
    files = [source];
  } else {
    files = await hubDatasetFiles(source, req.revision ?? "main", split, log);
  }
  const items: TaskItem[] = [];
  for (const f of files) for (const it of await readDataFile(f, key)) items.push(it);
  return items;
}

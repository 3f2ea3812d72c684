/**
 * train_dataset and eval_dataset as a run file gives them: the source with its split, subset and
 * revision in separate run keys (as TRL users write load_dataset("org/name", "subset",
 * split="train")), loaded by @pbrl/preference-data; its DatasetErrors become usage errors (exit
 * code 2) with the same message. See docs/datasets.md.
 */
import { existsSync } from "node:fs";
import * as path from "node:path";
import { HUB_ID } from "@pbrl/models";
import { DatasetError, hasDataExtension, loadDataset, type LoadDatasetOptions, type TaskItem } from "@pbrl/preference-data";
import { UsageError } from "./io.js";

/**
 * A dataset that cannot be read or fetched (a bad file, a hub id that does not resolve, no
 * network and no cached copy). A UsageError, so the CLI exits with code 2: the message says what
 * to change.
 */
export class DatasetSourceError extends UsageError {
  override name = "DatasetSourceError";
}

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

export interface RunDatasetRequest {
  key: DatasetKey;
  /** A file or folder path, or a hub id. */
  source: string;
  split?: string;
  config?: string;
  revision?: string;
}

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
export function datasetRequest(run: Readonly<Record<string, unknown>>, key: DatasetKey): RunDatasetRequest | undefined {
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

/** The items of a run's dataset, its split defaulting by key (DEFAULT_SPLIT). */
export async function loadRunDataset(req: RunDatasetRequest, options: Pick<LoadDatasetOptions, "log"> = {}): Promise<TaskItem[]> {
  try {
    return await loadDataset(req, { ...options, defaultSplit: DEFAULT_SPLIT[req.key] });
  } catch (err) {
    if (err instanceof DatasetError) throw new DatasetSourceError(err.message, { cause: err });
    throw err;
  }
}

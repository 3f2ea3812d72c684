/**
 * Datasets as arrays of task items: a local file chosen by extension (.jsonl, .json, .csv,
 * .parquet), a local dataset folder, or a Hugging Face hub dataset id "org/name" with its split,
 * subset and revision, as load_dataset("org/name", "subset", split="train") picks them. See
 * docs/datasets.md.
 */
import { existsSync, statSync } from "node:fs";
import * as path from "node:path";
import { HUB_ID, type HubClientOptions } from "@pbrl/models";
import type { TaskItem } from "../types.js";
import { DatasetError } from "./errors.js";
import { DATA_EXTENSIONS, readDataFile } from "./formats.js";
import { folderDatasetFiles, hubDatasetFiles } from "./hub.js";

/** Which dataset to load, and (for a folder or hub dataset) which split, subset and revision of it. */
export interface DatasetRequest {
  /** A file or folder path, or a hub id "org/name". */
  source: string;
  /** Default: the options' defaultSplit, else "train". */
  split?: string;
  /** The subset (config) name; default the dataset's default subset. */
  config?: string;
  /** Branch, tag or commit of a hub dataset; default "main". */
  revision?: string;
  /**
   * What the dataset is called in messages, which name the options as `<key>_split` etc.
   * (the CLI passes its run keys, train_dataset and eval_dataset); default "dataset".
   */
  key?: string;
}

/** A dataset source: a path or hub id (its default split), or a request naming split, subset and revision. */
export type DatasetSource = string | DatasetRequest;

export interface LoadDatasetOptions {
  /** Where download progress and cache fallbacks are reported; default: stderr. */
  log?: (line: string) => void;
  /** The split read from a folder or hub dataset whose request names none; default "train". */
  defaultSplit?: string;
  /** How a hub dataset is fetched (hub URL, token, cache folder, retries, stall timeout); defaults from the HF_* environment variables. */
  hub?: HubClientOptions;
}

/** Whether `p` ends in an extension pbrl reads as a data file (.jsonl, .json, .csv, .parquet). */
export const hasDataExtension = (p: string): boolean => path.extname(p).toLowerCase() in DATA_EXTENSIONS;

/** The items of a dataset: a file, a dataset folder, or a hub dataset's split. Failures are DatasetErrors. */
export async function loadDataset(dataset: DatasetSource, options: LoadDatasetOptions = {}): Promise<TaskItem[]> {
  const req: DatasetRequest = typeof dataset === "string" ? { source: dataset } : dataset;
  const { source } = req;
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const key = req.key ?? "dataset";
  const split = { key, split: req.split ?? options.defaultSplit ?? "train", config: req.config };
  if (/^hf:\/\//i.test(source)) {
    const id = source
      .slice("hf://".length)
      .replace(/^datasets\//i, "")
      .split("@")[0]!;
    throw new DatasetError(
      "invalid_request",
      `${key}: write a hub dataset as its id, ${JSON.stringify(id)}, with the split in ${key}_split (and a revision in ${key}_revision), not as an hf:// URL`,
    );
  }
  let files: string[];
  if (existsSync(source) && statSync(source).isDirectory()) {
    if (req.revision !== undefined) throw new DatasetError("invalid_request", `${key}_revision applies to hub datasets; ${source} is a local folder`);
    files = await folderDatasetFiles(source, split);
  } else if (existsSync(source) || hasDataExtension(source) || !HUB_ID.test(source)) {
    if (!existsSync(source)) {
      const hubHint = HUB_ID.test(source) || !/[:]/.test(source) ? "" : ` (a hub dataset is written org/name, with the split in ${key}_split)`;
      throw new DatasetError(
        "not_found",
        `${key}: ${source} not found: give a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name${hubHint}`,
      );
    }
    const extra = (["split", "config", "revision"] as const).find((k) => req[k] !== undefined);
    if (extra !== undefined)
      throw new DatasetError(
        "invalid_request",
        `${key}_${extra} applies to hub datasets and dataset folders; ${source} is a single file (leave ${key}_${extra} unset)`,
      );
    files = [source];
  } else {
    files = await hubDatasetFiles(source, req.revision ?? "main", split, log, options.hub);
  }
  const items: TaskItem[] = [];
  for (const f of files) for (const it of await readDataFile(f, key)) items.push(it);
  return items;
}

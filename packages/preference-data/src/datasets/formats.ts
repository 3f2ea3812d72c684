/**
 * Dataset files by extension: .jsonl and .json (one object per line, or an array of objects),
 * .csv (a header row, string values) and .parquet. Text formats are decoded strictly as UTF-8.
 */
import * as path from "node:path";
import type { TaskItem } from "../types.js";
import { readUtf8File } from "./utf8-file.js";
import { csvRows, CsvSyntaxError } from "./csv.js";
import { DatasetError } from "./errors.js";
import { readParquetRows } from "./parquet.js";

export type DataFormat = "json" | "csv" | "parquet";

/** The extensions pbrl reads, and their format. */
export const DATA_EXTENSIONS: Readonly<Record<string, DataFormat>> = { ".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet" };

export const formatOf = (file: string): DataFormat | undefined => DATA_EXTENSIONS[path.extname(file).toLowerCase()];

/**
 * JSON text: an array of objects, or JSON lines. Files with other extensions are read this way
 * too (as pbrl always did); their messages say which extensions pbrl knows.
 */
function jsonItems(text: string, file: string, key: string, known: boolean): unknown[] {
  const note = known ? "" : ` (pbrl reads .jsonl, .json, .csv and .parquet by extension; ${path.basename(file)} was read as JSON lines)`;
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) {
    try {
      return JSON.parse(trimmed) as unknown[];
    } catch (err) {
      throw new DatasetError("invalid_file", `${key}: ${file} is not valid JSON: ${(err as Error).message}${note}`);
    }
  }
  // Lines are counted in the file as written, blank ones before the first item included.
  const items: unknown[] = [];
  text.split("\n").forEach((line, i) => {
    if (line.trim() === "") return;
    try {
      items.push(JSON.parse(line));
    } catch (err) {
      throw new DatasetError("invalid_file", `${key}: ${file} line ${i + 1} is not valid JSON: ${(err as Error).message}${note}`);
    }
  });
  return items;
}

/** The items of one local data file; `key` (train_dataset, eval_dataset) starts every message. */
export async function readDataFile(file: string, key: string): Promise<TaskItem[]> {
  const format = formatOf(file);
  let items: unknown[];
  if (format === "parquet") {
    items = await readParquetRows(file, `${key}:`);
  } else if (format === "csv") {
    const text = readUtf8File(file, `${key} file`);
    try {
      items = csvRows(text);
    } catch (err) {
      // Stryker disable next-line ConditionalExpression: csvRows throws only CsvSyntaxError, so the check always holds
      if (err instanceof CsvSyntaxError) throw new DatasetError("invalid_file", `${key}: ${file} is not valid CSV: ${err.message}`);
      throw err;
    }
  } else {
    items = jsonItems(readUtf8File(file, `${key} file`), file, key, format !== undefined);
  }
  items.forEach((it, i) => {
    if (it === null || typeof it !== "object" || Array.isArray(it)) throw new DatasetError("invalid_file", `${key}: item ${i} of ${file} is not a JSON object`);
  });
  return items as TaskItem[];
}

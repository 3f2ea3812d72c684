/**
 * metrics.jsonl, tolerantly: a run appends one JSON object per line, so a running or killed run
 * may end in a half-written line. That line is left out and flagged rather than failing the
 * report; any other unreadable line is left out and listed. The file is read line by line, never
 * as one string: a long run's file may be larger than the longest string V8 can hold (~512 MiB),
 * and a line longer than any record (a stretch of NUL bytes a crash left) is skipped unread.
 */
import { promises as fs } from "node:fs";
import { METRIC_KINDS, type MetricKind, type MetricsData, type MetricsRecord, type MetricValue } from "../run-data.js";

/** Longer lines are no record pbrl writes (those take a few KiB): listed as skipped, never held whole. */
export const MAX_METRICS_LINE_BYTES = 16 * 1024 * 1024;

/** Bytes read at a time. */
const CHUNK_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;

export function emptyMetrics(): MetricsData {
  return { records: [], byKind: { collect: [], train: [], eval: [], round: [], reward: [] }, other: [], skipped: [], partialLastLine: false };
}

function toRecord(value: unknown): MetricsRecord | string {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "not a JSON object";
  const out: Record<string, MetricValue> = {};
  for (const [k, v] of Object.entries(value)) {
    // Nested values are no metric the report can show; keep the flat ones.
    if (v === null || typeof v === "number" || typeof v === "string" || typeof v === "boolean") out[k] = v;
  }
  if (typeof out["kind"] !== "string") return `has no "kind"`;
  return { ...out, kind: out["kind"], step: typeof out["step"] === "number" ? out["step"] : Number.NaN };
}

/**
 * Adds one line (numbered from 1, without its newline) to `data`. `unterminated`: the file's last
 * line, with no newline after it, so possibly still being written.
 */
function addLine(data: MetricsData, line: string, lineNumber: number, unterminated: boolean): void {
  if (line.trim() === "") return;
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    if (unterminated) data.partialLastLine = true;
    else data.skipped.push({ line: lineNumber, reason: "not valid JSON" });
    return;
  }
  const record = toRecord(json);
  if (typeof record === "string") {
    data.skipped.push({ line: lineNumber, reason: record });
    return;
  }
  data.records.push(record);
  if ((METRIC_KINDS as readonly string[]).includes(record.kind)) data.byKind[record.kind as MetricKind].push(record);
  else data.other.push(record);
}

export function parseMetrics(text: string): MetricsData {
  const data = emptyMetrics();
  const lines = text.split("\n");
  // A file that does not end in a newline ends in a line still being written (or cut by a kill).
  const unterminated = lines[lines.length - 1] !== "";
  if (!unterminated) lines.pop();
  lines.forEach((line, i) => addLine(data, line, i + 1, unterminated && i === lines.length - 1));
  return data;
}

/**
 * Reads a metrics.jsonl as {@link parseMetrics} reads its text, a chunk at a time; undefined when
 * the file does not exist. Lines are cut at newline bytes, which never occur inside a UTF-8
 * character, so each line decodes as it would within the whole text.
 */
export async function readMetricsFile(file: string): Promise<MetricsData | undefined> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  const data = emptyMetrics();
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  // The line in progress when it spans chunks: copies of its pieces, or only its length once it is too long.
  let pieces: Buffer[] = [];
  let pending = 0;
  let lineNumber = 0;
  const endLine = (unterminated: boolean, tail?: string): void => {
    lineNumber += 1;
    if (pending > MAX_METRICS_LINE_BYTES)
      data.skipped.push({ line: lineNumber, reason: `longer than ${MAX_METRICS_LINE_BYTES / 2 ** 20} MiB, which no record is` });
    else addLine(data, tail ?? Buffer.concat(pieces).toString("utf8"), lineNumber, unterminated);
    pieces = [];
    pending = 0;
  };
  try {
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      const bytes = chunk.subarray(0, bytesRead);
      for (let start = 0; start < bytesRead;) {
        const newline = bytes.indexOf(NEWLINE, start);
        const end = newline === -1 ? bytesRead : newline;
        if (newline !== -1 && pending === 0) {
          // The common case: the whole line is in this chunk.
          endLine(false, bytes.toString("utf8", start, end));
        } else {
          pending += end - start;
          if (pending <= MAX_METRICS_LINE_BYTES) pieces.push(Buffer.from(bytes.subarray(start, end)));
          else pieces = [];
          if (newline !== -1) endLine(false);
        }
        start = end + 1;
      }
    }
    if (pending > 0) endLine(true);
  } finally {
    await handle.close();
  }
  return data;
}

/** A record's value as a number: NaN when missing, null (a logged NaN) or not numeric. */
export function num(record: MetricsRecord, key: string): number {
  const v = record[key];
  return typeof v === "number" ? v : Number.NaN;
}

/** The numeric keys of these records, in first-seen order, without the bookkeeping ones. */
export function numericKeys(records: readonly MetricsRecord[], exclude: readonly string[] = BOOKKEEPING): string[] {
  // Set keeps insertion order: keys appear in the order the run first logged them.
  const seen = new Set<string>();
  for (const r of records) {
    for (const [k, v] of Object.entries(r)) {
      // a key whose values are all null (NaNs the run logged) has nothing to plot
      if (!exclude.includes(k) && typeof v === "number") seen.add(k);
    }
  }
  return [...seen];
}

/** Keys every record carries that are positions, not measurements. */
export const BOOKKEEPING = ["kind", "step", "round", "epoch", "update", "time", "elapsed_s"] as const satisfies readonly string[];

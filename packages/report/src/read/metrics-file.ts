/**
 * metrics.jsonl, tolerantly: a run appends one JSON object per line, so a running or killed run
 * may end in a half-written line. That line is left out and flagged rather than failing the
 * report; any other unreadable line is left out and listed.
 */
import { METRIC_KINDS, type MetricKind, type MetricsData, type MetricsRecord, type MetricValue } from "../run-data.js";

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

export function parseMetrics(text: string): MetricsData {
  const data = emptyMetrics();
  const lines = text.split("\n");
  // A file that does not end in a newline ends in a line still being written (or cut by a kill).
  const unterminated = lines[lines.length - 1] !== "";
  if (!unterminated) lines.pop();
  lines.forEach((line, i) => {
    if (line.trim() === "") return;
    const isLast = i === lines.length - 1;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      if (isLast && unterminated) data.partialLastLine = true;
      else data.skipped.push({ line: i + 1, reason: "not valid JSON" });
      return;
    }
    const record = toRecord(json);
    if (typeof record === "string") {
      data.skipped.push({ line: i + 1, reason: record });
      return;
    }
    data.records.push(record);
    if ((METRIC_KINDS as readonly string[]).includes(record.kind)) data.byKind[record.kind as MetricKind].push(record);
    else data.other.push(record);
  });
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

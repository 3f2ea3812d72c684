import { appendFileSync, mkdirSync } from "node:fs";
import * as path from "node:path";

export type MetricsRecord = { kind: "collect" | "train" | "eval"; step: number } & Record<string, number | string>;

/**
 * The run's metrics, one JSON object per line in `metrics.jsonl`. Lines are appended
 * synchronously, so a crash loses at most the line being written.
 */
export class MetricsLog {
  readonly records: MetricsRecord[] = [];
  readonly file: string;

  constructor(outputDir: string) {
    mkdirSync(outputDir, { recursive: true });
    this.file = path.join(outputDir, "metrics.jsonl");
  }

  write(record: MetricsRecord): void {
    this.records.push(record);
    appendFileSync(this.file, JSON.stringify(record) + "\n");
  }
}

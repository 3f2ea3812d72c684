import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import { fileWriteError } from "@pbrl/core-tensor";

export type MetricsRecord = { kind: "collect" | "train" | "eval" | "round" | "reward"; step: number } & Record<string, number | string>;

/** Receives every metrics record as it is written (the trainers' `onLog` option). */
export type MetricsListener = (record: Readonly<MetricsRecord>) => void;

/**
 * The run's metrics, one JSON object per line in `metrics.jsonl`. Lines are appended
 * synchronously, so a crash loses at most the line being written; `lines` is the cursor a
 * checkpoint stores, and a resumed run cuts the file back to it. Each record gets `time` (ISO)
 * and `elapsed_s` (seconds since this start of the run; a resumed run counts from its restart).
 */
export class MetricsLog {
  readonly records: MetricsRecord[] = [];
  readonly file: string;
  private count = 0;
  private readonly started = Date.now();
  private readonly listeners: MetricsListener[];

  constructor(outputDir: string, options: { resumeAtLine?: number; listeners?: readonly (MetricsListener | undefined)[] } = {}) {
    this.listeners = (options.listeners ?? []).filter((l): l is MetricsListener => l !== undefined);
    this.file = path.join(outputDir, "metrics.jsonl");
    if (options.resumeAtLine === undefined) {
      this.writing(() => {
        mkdirSync(outputDir, { recursive: true });
        writeFileSync(this.file, "");
      });
      return;
    }
    const kept = existsSync(this.file)
      ? readFileSync(this.file, "utf8")
          .split("\n")
          .filter((l) => l !== "")
          .slice(0, options.resumeAtLine)
      : [];
    if (kept.length !== options.resumeAtLine) {
      throw new Error(
        `${this.file} has ${kept.length} lines but the checkpoint was taken after line ${options.resumeAtLine}; the metrics log does not belong to this checkpoint`,
      );
    }
    // named like core-tensor's atomic writes, so a run that finds one left by a killed run removes it
    const tmp = path.join(outputDir, `.metrics.jsonl.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
    this.writing(() => {
      try {
        writeFileSync(tmp, kept.map((l) => `${l}\n`).join(""));
        renameSync(tmp, this.file);
      } catch (err) {
        rmSync(tmp, { force: true });
        throw err;
      }
    });
    for (const l of kept) this.records.push(JSON.parse(l) as MetricsRecord);
    this.count = kept.length;
  }

  get lines(): number {
    return this.count;
  }

  write(record: MetricsRecord): void {
    const now = Date.now();
    const stamped: MetricsRecord = { ...record, time: new Date(now).toISOString(), elapsed_s: Math.round(now - this.started) / 1000 };
    this.writing(() => appendFileSync(this.file, JSON.stringify(stamped) + "\n"));
    this.records.push(stamped);
    this.count += 1;
    for (const l of this.listeners) l(stamped);
  }

  /** Runs a write of the log; a full disk (or quota, or read-only folder) names metrics.jsonl. */
  private writing(write: () => void): void {
    try {
      write();
    } catch (err) {
      throw fileWriteError(err, this.file);
    }
  }
}

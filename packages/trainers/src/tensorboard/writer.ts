// TensorBoardWriter: appends Events to a TensorBoard event file under the run folder, for
// `report_to: tensorboard`. TensorBoard (and wandb's TensorBoard sync) read every
// *tfevents* file in a folder, in file-name order, as one run.
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from "node:fs";
import { hostname as osHostname } from "node:os";
import * as path from "node:path";
import { fileWriteError } from "@pbrl/core-tensor";
import { encodeFileVersionEvent, encodeSessionStartEvent, encodeSummaryEvent, type SummaryValue } from "./event.js";
import { histogramOf, type HistogramBins } from "./histogram.js";
import { frameRecord } from "./record.js";

/**
 * Event files go to `<output_dir>/tensorboard/`, one folder for the whole run: unlike TRL's
 * `output_dir/runs/<timestamp>_<host>` (a new folder, so a new TensorBoard run, per start), every
 * (re)start of a pbrl run adds a new file to the same folder, so a resumed run's curves continue
 * the crashed run's in one TensorBoard run. `tensorboard --logdir <output_dir>` finds it.
 */
export const TENSORBOARD_SUBDIR = "tensorboard";

export function tensorBoardDir(outputDir: string): string {
  return path.join(outputDir, TENSORBOARD_SUBDIR);
}

export interface TensorBoardWriterOptions {
  /** Clock in seconds since the epoch, for the file name and default wall times (tests fix it). */
  now?: () => number;
  /** Host name in the file name (default os.hostname()). */
  hostname?: string;
  /**
   * Set when the run resumes from a checkpoint: the first step the resumed run may write again.
   * A SessionLog START event at that step follows file_version, so TensorBoard's Python loader
   * drops points at steps >= it left by the run that crashed. (TensorBoard's Rust data server
   * ignores START, but when a tag's step goes back it drops that tag's points at steps >= the
   * new one, which comes to the same for the tags the resumed run writes again.)
   */
  resumeStep?: number;
}

/**
 * The file name for one process start: events.out.tfevents.<unix-seconds>.<host>.<pid>.pbrl,
 * as TensorFlow names them (with "pbrl" as the suffix). The 10-digit seconds make later starts sort
 * after earlier ones, which TensorBoard relies on. Host characters outside [A-Za-z0-9._-] become "_".
 */
export function eventFileName(nowS: number, host: string, pid: number): string {
  return `events.out.tfevents.${Math.floor(nowS)}.${host.replace(/[^A-Za-z0-9._-]/g, "_")}.${pid}.pbrl`;
}

/**
 * One event file, created on construction (never an existing one: the name is opened with O_EXCL,
 * and a `.1`, `.2`… suffix is added when a writer of this process already took it in the same
 * second), written with one append per record so a crash loses at most the last record, and
 * fsync'ed on close. Not safe for two writers on one file; each process start makes its own.
 */
export class TensorBoardWriter {
  readonly file: string;
  private fd: number | undefined;
  private readonly now: () => number;

  constructor(dir: string, options: TensorBoardWriterOptions = {}) {
    this.now = options.now ?? (() => Date.now() / 1000);
    const base = path.join(dir, eventFileName(this.now(), options.hostname ?? osHostname(), process.pid));
    let file = base;
    try {
      mkdirSync(dir, { recursive: true });
      for (let n = 1; ; n++) {
        try {
          this.fd = openSync(file, "ax");
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST" || n > 1000) throw e;
          file = `${base}.${n}`;
        }
      }
    } catch (err) {
      throw fileWriteError(err, file);
    }
    this.file = file;
    const wallTime = this.now();
    this.append(encodeFileVersionEvent(wallTime));
    if (options.resumeStep !== undefined) this.append(encodeSessionStartEvent(wallTime, options.resumeStep));
  }

  /**
   * One event with a scalar per numeric entry of `record` (tag = key, e.g. "loss",
   * "eval/turn_1/reward_mean"); other entries (strings such as a record's `kind`) are skipped.
   * NaN and ±Infinity are written as they are: TensorBoard stores and shows them, and a NaN
   * loss is worth seeing. Values are stored as float32. Returns how many scalars were written
   * (0: nothing written).
   */
  scalars(step: number, record: Readonly<Record<string, unknown>>, wallTimeS?: number): number {
    const values: SummaryValue[] = [];
    for (const [tag, v] of Object.entries(record)) if (typeof v === "number") values.push({ tag, simpleValue: v });
    if (values.length > 0) this.write(step, values, wallTimeS);
    return values.length;
  }

  /** A markdown text (TensorBoard's Text tab), e.g. sample completions. */
  text(step: number, tag: string, markdown: string, wallTimeS?: number): void {
    this.write(step, [{ tag, text: markdown }], wallTimeS);
  }

  /**
   * A histogram of `values` (see histogramOf: non-finite values are left out). Returns false,
   * writing nothing, when no finite value is left.
   */
  histogram(step: number, tag: string, values: readonly number[], bins?: HistogramBins, wallTimeS?: number): boolean {
    const h = histogramOf(values, bins);
    if (h === undefined) return false;
    this.write(step, [{ tag, histogram: h }], wallTimeS);
    return true;
  }

  /** Several values of any kind in one event (one record). */
  write(step: number, values: readonly SummaryValue[], wallTimeS?: number): void {
    this.append(encodeSummaryEvent(wallTimeS ?? this.now(), step, values));
  }

  /** Flushes the file to disk and closes it; later writes throw. Safe to call twice. */
  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      fsyncSync(fd);
    } catch (err) {
      throw fileWriteError(err, this.file);
    } finally {
      closeSync(fd);
    }
  }

  private append(event: Uint8Array): void {
    if (this.fd === undefined) throw new Error(`TensorBoardWriter: ${this.file} is closed`);
    const rec = frameRecord(event);
    try {
      // writeSync may write less than asked (rare, for regular files); loop until the record is out.
      for (let off = 0; off < rec.length;) off += writeSync(this.fd, rec, off, rec.length - off);
    } catch (err) {
      throw fileWriteError(err, this.file);
    }
  }
}

/**
 * A round's label file, `<dir>/round_NNNN.jsonl`: one label record a line, appended and fsynced
 * one at a time, so an answer "saved" to a person means the pick survives a crash.
 *
 * A kill during a write can leave a torn last line (no newline, not JSON). Reading ignores it and
 * the next append first cuts the file back to its last complete line; complete lines are never
 * rewritten and files are never deleted. Any other line that is not a label record stops reading
 * with the file and line named, because guessing would silently lose someone's labels.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { LabelFileError } from "./errors.js";
import { parseLabelRecord } from "./label-record.js";
import type { LabelRecord } from "./types.js";

const NEWLINE = 0x0a;

/** `<dir>/round_NNNN.jsonl`, the round zero-padded to four digits. */
export function labelFilePath(dir: string, round: number): string {
  if (!Number.isInteger(round) || round < 0) throw new RangeError(`round must be a non-negative integer, got ${round}`);
  return path.join(dir, `round_${String(round).padStart(4, "0")}.jsonl`);
}

interface Scan {
  records: LabelRecord[];
  /** Bytes of the file that hold complete lines (and a valid unterminated last record). */
  keep: number;
  /** The file's length as read. */
  size: number;
  /** The last record lacks its newline (written by hand): add it before appending. */
  needsNewline: boolean;
}

async function scan(file: string, round: number): Promise<Scan | null> {
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  const records: LabelRecord[] = [];
  let start = 0;
  let line = 0;
  while (start < bytes.length) {
    line += 1;
    const end = bytes.indexOf(NEWLINE, start);
    const complete = end !== -1;
    const text = bytes.subarray(start, complete ? end : bytes.length).toString("utf8");
    const checked = checkLine(text, round);
    if (!complete) {
      // the tail after the last newline: a torn write unless it is a whole record
      if (checked.kind === "record") {
        records.push(checked.record);
        return { records, keep: bytes.length, size: bytes.length, needsNewline: true };
      }
      if (checked.kind === "blank") return { records, keep: bytes.length, size: bytes.length, needsNewline: false };
      return { records, keep: start, size: bytes.length, needsNewline: false };
    }
    if (checked.kind === "invalid") throw new LabelFileError(file, line, checked.message);
    if (checked.kind === "record") records.push(checked.record);
    start = end + 1;
  }
  return { records, keep: bytes.length, size: bytes.length, needsNewline: false };
}

type Checked = { kind: "record"; record: LabelRecord } | { kind: "blank" } | { kind: "invalid"; message: string };

function checkLine(text: string, round: number): Checked {
  if (text.trim() === "") return { kind: "blank" };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { kind: "invalid", message: `not JSON (${(e as Error).message})` };
  }
  const parsed = parseLabelRecord(value);
  if (!parsed.ok) return { kind: "invalid", message: `not a label record: ${parsed.message}` };
  if (parsed.record.round !== round) return { kind: "invalid", message: `a record of round ${parsed.record.round} in the file of round ${round}` };
  return { kind: "record", record: parsed.record };
}

/** The records of a round's label file; none when it does not exist. A torn last line is ignored. */
export async function readLabels(dir: string, round: number): Promise<LabelRecord[]> {
  return (await scan(labelFilePath(dir, round), round))?.records ?? [];
}

/** Appends to one round's label file; appends are queued, so lines never interleave. */
export class LabelLog {
  readonly file: string;
  private repaired = false;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    readonly dir: string,
    readonly round: number,
  ) {
    this.file = labelFilePath(dir, round);
  }

  /** The records on disk now (see {@link readLabels}). */
  read(): Promise<LabelRecord[]> {
    return readLabels(this.dir, this.round);
  }

  /** Validates and appends one record; resolves only once it is fsynced. */
  append(record: LabelRecord): Promise<void> {
    const parsed = parseLabelRecord(record);
    if (!parsed.ok) return Promise.reject(new TypeError(`not a label record: ${parsed.message}`));
    if (record.round !== this.round) return Promise.reject(new RangeError(`record of round ${record.round} appended to ${this.file}`));
    const line = Buffer.from(JSON.stringify(record) + "\n", "utf8");
    const done = this.tail.then(() => this.write(line));
    // a failed append must not block the ones after it; the caller still sees its own failure
    this.tail = done.catch(() => undefined);
    return done;
  }

  private async write(line: Buffer): Promise<void> {
    let prefix: Buffer | null = null;
    if (!this.repaired) prefix = await this.repair();
    const handle = await fs.open(this.file, "a");
    try {
      await handle.write(prefix === null ? line : Buffer.concat([prefix, line]));
      await handle.sync();
    } catch (e) {
      // a write that failed part way (a full disk) may have left a torn line: look again next time
      this.repaired = false;
      throw e;
    } finally {
      await handle.close();
    }
  }

  /** Once per log: makes the directory and cuts a torn tail; returns a newline owed to a hand-written last record. */
  private async repair(): Promise<Buffer | null> {
    await fs.mkdir(this.dir, { recursive: true });
    const found = await scan(this.file, this.round);
    if (found === null) {
      // a new file: create it and fsync the directory, so the file itself survives a crash
      await (await fs.open(this.file, "a")).close();
      await syncDir(this.dir);
    } else if (found.keep < found.size) {
      await fs.truncate(this.file, found.keep);
    }
    this.repaired = true;
    return found?.needsNewline === true ? Buffer.from("\n") : null;
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, "r");
  try {
    await handle.sync();
  } catch (e) {
    // some file systems cannot fsync a directory; the file's own fsync still holds its data
    if ((e as NodeJS.ErrnoException).code !== "EINVAL" && (e as NodeJS.ErrnoException).code !== "EISDIR") throw e;
  } finally {
    await handle.close();
  }
}

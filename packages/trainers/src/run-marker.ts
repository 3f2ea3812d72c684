/**
 * `.pbrl-run.json`, pbrl's list of what is its own in a run folder (output_dir, and a
 * policy_checkpoint_dir or preference_replay_dir elsewhere): the names a run writes there,
 * listed before anything is written under them, so that a run killed at any point leaves no file
 * of its own unlisted. overwrite_output_dir, and a run started again in place, remove only what
 * this list names; a name in the folder it does not list is never written over or removed.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import * as path from "node:path";

export const RUN_MARKER = ".pbrl-run.json";

const ABOUT = "pbrl wrote the entries listed here; overwrite_output_dir replaces only these and never anything else in this folder";

/** A name the marker may list: one entry of the folder itself, never a path out of it. */
const isEntryName = (n: unknown): n is string => typeof n === "string" && n !== "" && n !== "." && n !== ".." && !/[/\\]/.test(n) && n !== RUN_MARKER;

/**
 * The entries `dir`'s marker lists: undefined when there is no marker, "damaged" when it cannot
 * be read as one (then nothing in the folder counts as pbrl's).
 */
export function readRunMarker(dir: string): ReadonlySet<string> | undefined | "damaged" {
  const file = path.join(dir, RUN_MARKER);
  if (!existsSync(file)) return undefined;
  try {
    const m = JSON.parse(readFileSync(file, "utf8")) as { written_by?: unknown; entries?: unknown };
    if (m.written_by !== "pbrl" || !Array.isArray(m.entries)) return "damaged";
    return new Set(m.entries.filter(isEntryName));
  } catch {
    return "damaged";
  }
}

/** Replaces `dir`'s marker atomically (a temporary sibling, flushed, renamed over it). */
export function writeRunMarker(dir: string, entries: Iterable<string>): void {
  const file = path.join(dir, RUN_MARKER);
  const tmp = path.join(dir, `.${RUN_MARKER}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  const body = JSON.stringify({ written_by: "pbrl", about: ABOUT, entries: [...new Set(entries)].sort() }, null, 2) + "\n";
  const fd = openSync(tmp, "w");
  try {
    try {
      writeSync(fd, body);
      // Stryker disable next-line CallExpression: the flush only decides what survives a power loss, which no test can stage
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (err) {
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: the temporary exists here (openSync made it), so force matters only if another process removed it meanwhile
    rmSync(tmp, { force: true }); // a marker not written leaves nothing behind
    throw err;
  }
}

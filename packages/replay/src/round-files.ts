import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { readRoundFile, type ReplayIndexEntry, type RoundFile } from "@pbrl/preference-data";
import { ReplayError } from "./errors.js";

/** Where an index entry's file lives: entries name files inside the replay directory, never outside it. */
export function entryPath(dir: string, entry: ReplayIndexEntry): string {
  const file = path.resolve(dir, entry.file);
  const rel = path.relative(path.resolve(dir), file);
  if (rel === "" || rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    throw new ReplayError(
      `replay round ${entry.iteration}: file ${JSON.stringify(entry.file)} is not inside the replay directory ${dir}; a replay index names only files in that directory`,
    );
  }
  return file;
}

/** SHA-256 of a file's bytes, hex. */
export async function fileSha256(file: string): Promise<string> {
  return createHash("sha256")
    .update(await fs.readFile(file))
    .digest("hex");
}

// Stryker disable all: its catch is reached only when the file vanishes between its read (readRoundFile) and its hash
/** The file's SHA-256, a vanished or unreadable file reported as a ReplayError naming it. */
async function hashOf(file: string, entry: ReplayIndexEntry): Promise<string> {
  try {
    return await fileSha256(file);
  } catch (err) {
    throw new ReplayError(`replay round ${entry.iteration}: cannot read ${file} to check its SHA-256: ${(err as Error).message}`, { cause: err });
  }
}
// Stryker restore all

/**
 * Reads an indexed round file and checks that it still is the dataset the index describes, so a
 * file replaced or edited since it was indexed is reported instead of silently replayed.
 */
export async function readIndexedRound(dir: string, entry: ReplayIndexEntry): Promise<RoundFile> {
  const file = entryPath(dir, entry);
  let round: RoundFile;
  try {
    round = await readRoundFile(file);
  } catch (err) {
    throw new ReplayError(`replay round ${entry.iteration}: ${(err as Error).message}`, { cause: err });
  }
  if (round.iteration !== entry.iteration) {
    throw new ReplayError(`replay round file ${file} holds iteration ${round.iteration} but the replay index expects iteration ${entry.iteration}`);
  }
  if (round.num_pairs !== entry.num_pairs) {
    throw new ReplayError(`replay round file ${file} holds ${round.num_pairs} pairs but the replay index expects ${entry.num_pairs}`);
  }
  if (entry.sha256 !== undefined && (await hashOf(file, entry)) !== entry.sha256) {
    throw new ReplayError(
      `replay round file ${file} was rewritten after the replay index recorded it (its SHA-256 differs); it no longer holds the pairs of round ${entry.iteration}`,
    );
  }
  return round;
}

import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { readRoundFile, type ReplayIndexEntry, type RoundFile } from "@pbrl/preference-data";
import { ReplayError } from "./errors.js";

/** Where an index entry's file lives: entries name files relative to the replay directory. */
export function entryPath(dir: string, entry: ReplayIndexEntry): string {
  return path.resolve(dir, entry.file);
}

/** SHA-256 of a file's bytes, hex. */
export async function fileSha256(file: string): Promise<string> {
  return createHash("sha256").update(await fs.readFile(file)).digest("hex");
}

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
  if (entry.sha256 !== undefined && (await fileSha256(file)) !== entry.sha256) {
    throw new ReplayError(`replay round file ${file} was rewritten after the replay index recorded it (its SHA-256 differs); it no longer holds the pairs of round ${entry.iteration}`);
  }
  return round;
}

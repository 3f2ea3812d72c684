/**
 * The label files of a run labelled by people (`human_labels/round_NNNN.jsonl`), read through
 * @pbrl/human-labels so the report accepts exactly the records the trainer does. A file that
 * cannot be read is kept with its error, so the report shows the other rounds and says which
 * file and line to fix.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { LabelFileError, labelFilePath, readLabels } from "@pbrl/human-labels";
import type { HumanLabelFile, HumanLabelsData } from "../run-data.js";

const LABEL_FILE = /^round_(\d{4,})\.jsonl$/;

/** The label files of `dir` by round; null when the folder is missing or holds none. */
export async function readHumanLabels(dir: string): Promise<HumanLabelsData | null> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return null;
  }
  const rounds = names
    .flatMap((n) => {
      const m = LABEL_FILE.exec(n);
      // round_00012.jsonl is not the name readLabels opens for round 12: leave it out rather than read another file
      return m !== null && path.basename(labelFilePath(dir, Number(m[1]))) === n ? [Number(m[1])] : [];
    })
    .sort((a, b) => a - b);
  if (rounds.length === 0) return null;
  const files: HumanLabelFile[] = [];
  for (const round of rounds) {
    const file = labelFilePath(dir, round);
    try {
      files.push({ round, file, records: await readLabels(dir, round), error: null });
    } catch (err) {
      const error = err instanceof LabelFileError ? err.message : `cannot read ${file}: ${(err as Error).message}`;
      files.push({ round, file, records: [], error });
    }
  }
  return { dir, files };
}

/**
 * config.json: the run's validated config as a JSON record, with secrets redacted (it is written
 * to disk, copied into every checkpoint's state.json and onto the model card push_to_hub uploads),
 * and the changes each resume made.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { redactRecord, writeFileAtomic } from "@pbrl/core-tensor";
import type { TaskItem } from "@pbrl/preference-data";
import { ConfigError } from "./config/define-config.js";
import type { ConfigChange } from "./resume-changes.js";

/**
 * What config.json holds for a run: the trainer's name and every field, with every secret at any
 * depth redacted, and what code supplied in place of the config's choices (`custom`, see custom-plugins.ts) (redactRecord: credential-named keys such as comparator_api_extra_body.api_key,
 * and values that look like credentials: URL secrets, "Bearer …", sk-… tokens).
 */
export function runConfigRecord(trainer: string, args: object, custom: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  return redactRecord({ trainer, ...args, ...custom });
}

/** A run needs at least one training item; an empty dataset is a mistake, not a run with 0 pairs. */
export function checkDataset(configName: string, items: readonly TaskItem[]): void {
  if (items.length === 0)
    throw new ConfigError(configName, ["train_dataset: is empty; give a dataset with at least one item (check the file path and its format)"]);
}

/** Applies a resume's allowed changes to config.json and lists them under `resume_changes`. */
export async function recordResumeChanges(outputDir: string, afterRound: number, changes: readonly ConfigChange[]): Promise<void> {
  const file = path.join(outputDir, "config.json");
  const config = JSON.parse(await fs.readFile(file, "utf8")) as Record<string, unknown>;
  for (const c of changes) config[c.field] = c.to;
  const earlier = Array.isArray(config["resume_changes"]) ? (config["resume_changes"] as unknown[]) : [];
  config["resume_changes"] = [...earlier, { after_round: afterRound, changes }];
  await writeFileAtomic(file, JSON.stringify(redactRecord(config), null, 2) + "\n");
}

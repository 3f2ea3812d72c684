/**
 * What a resumed run may change. A resume continues the same run, so fields that decide what
 * the run learns from (data, comparator, replay, sampling, losses, seed) must stay as the
 * checkpoint recorded them; fields about where and how fast it runs, how long, and what it logs
 * may change, and each change is recorded in config.json.
 */
import { redactRecord } from "@pbrl/core-tensor";
import { ConfigError } from "./config/define-config.js";
import { MADPO_FIELDS, MADPO_ONLY_FIELDS } from "./config/madpo-config.js";

export const RESUMABLE_FIELDS: ReadonlySet<string> = new Set([
  // how long: more rounds continue the run
  "num_iterations",
  // where and how fast
  "backend",
  "agent_devices",
  "reference_devices",
  "comparator_devices",
  "critic_devices",
  "reward_model_device",
  "parallel_training",
  "reward_concurrency",
  "reward_timeout_s",
  "comparator_api_timeout",
  "comparator_api_max_concurrency",
  "comparator_api_max_retries",
  "comparator_api_max_response_bytes",
  "comparator_api_key_env",
  "comparator_api_headers",
  // what it logs and saves at the end
  "verbose",
  "logging_steps",
  "eval_interval",
  "eval_num_samples",
  "eval_batch_size",
  "save_dtype",
  "report_to",
  "push_to_hub",
  "hub_model_id",
  "hub_private_repo",
]);

// Where the run's folder is and how this start was requested: not part of what the run is, so
// never a change, and left out of the checkpoint (a moved folder resumes, and byte for byte).
const START_FIELDS = new Set(["output_dir", "resume_from_checkpoint", "overwrite_output_dir"]);

/** The config a checkpoint records: config.json's record without the start fields. */
export function checkpointConfig(record: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).filter(([k]) => !START_FIELDS.has(k)));
}

export interface ConfigChange {
  field: string;
  from: unknown;
  to: unknown;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Fields added after runs were checkpointed without them: such a checkpoint ran as the field's
 * default does (no LoRA, no recomputation, one micro-batch), so it resumes with the default.
 */
const ADDED_LATER = [
  "use_peft",
  "lora_r",
  "lora_alpha",
  "lora_dropout",
  "lora_target_modules",
  "use_rslora",
  "gradient_checkpointing",
  "gradient_accumulation_steps",
] as const satisfies readonly (keyof typeof MADPO_FIELDS)[];

/**
 * Fields the MARLHF configs had until they became MADPO's own: a MARLHF checkpoint recorded them,
 * at their default (they had no effect there), so they are no change when they are gone.
 */
const NOW_MADPO_ONLY = Object.keys(MADPO_ONLY_FIELDS) as (keyof typeof MADPO_ONLY_FIELDS)[];

function withLaterDefaults(saved: Readonly<Record<string, unknown>>, current: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const missing = ADDED_LATER.filter((f) => !(f in saved) && f in current);
  const gone = new Set<string>(NOW_MADPO_ONLY.filter((f) => f in saved && !(f in current) && same(saved[f], MADPO_ONLY_FIELDS[f].parse(undefined))));
  const kept = Object.fromEntries(Object.entries(saved).filter(([f]) => !gone.has(f)));
  return { ...kept, ...Object.fromEntries(missing.map((f) => [f, MADPO_FIELDS[f].parse(undefined)])) };
}

/**
 * Fields whose values differ between the checkpoint's config and this run's, both compared (and
 * named) redacted: a secret was written redacted, so the same secret given again is no change, and
 * a checkpoint written before a secret was redacted neither refuses the resume nor shows its secret.
 */
export function configChanges(saved: Readonly<Record<string, unknown>>, current: Readonly<Record<string, unknown>>): ConfigChange[] {
  const [was, now] = [redactRecord(withLaterDefaults(saved, current)), redactRecord(current)];
  const fields = [...new Set([...Object.keys(was), ...Object.keys(now)])].sort();
  return fields.filter((f) => !START_FIELDS.has(f) && !same(was[f], now[f])).map((field) => ({ field, from: was[field], to: now[field] }));
}

/** Throws a ConfigError naming every change a resume may not make; returns the allowed ones. */
export function checkResumeChanges(changes: readonly ConfigChange[], checkpointDir: string): ConfigChange[] {
  const refused = changes.filter((c) => !RESUMABLE_FIELDS.has(c.field));
  if (refused.length > 0) {
    throw new ConfigError(
      "resume (fields that must keep the checkpoint's values)",
      refused.map(
        (c) =>
          `${c.field}: the checkpoint ${checkpointDir} was trained with ${JSON.stringify(c.from)}, this run has ${JSON.stringify(c.to)}; a resume must keep it (set it back, or start a new run in another output_dir)`,
      ),
    );
  }
  return [...changes];
}

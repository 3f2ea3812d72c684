/**
 * push_to_hub (TRL's name): the trained agents, with a model card holding the run's config and
 * final evaluation, uploaded to hub_model_id at the end of training.
 */
import { readdirSync } from "node:fs";
import * as path from "node:path";
import { redactRecord, writeFileAtomic } from "@pbrl/core-tensor";
import { describeSkipped, HUB_ID, modelCard, pushToHub } from "@pbrl/models";
import { ConfigError } from "./config/define-config.js";
import type { EvalResult } from "./evaluation.js";

/** Before output_dir is touched: a push needs its token, so a run does not train for hours to fail at the end. */
export function checkPushReady(configName: string, a: { push_to_hub: boolean }): void {
  if (a.push_to_hub && !(process.env["HF_TOKEN"] ?? "").trim()) {
    throw new ConfigError(configName, [
      "push_to_hub: needs a Hugging Face token with write access in the environment variable HF_TOKEN (export HF_TOKEN=hf_…), or set push_to_hub=false",
    ]);
  }
}

export interface PushAgentsOptions {
  agentsDir: string;
  repo: string;
  private: boolean;
  trainer: string;
  /** config.json's record (secrets already redacted). */
  record: Readonly<Record<string, unknown>>;
  evalAfter: EvalResult | undefined;
  /** The checkpoint training started from, when it is a hub id. */
  baseModel: string | undefined;
  log: (line: string) => void;
}

/** A path on this machine: absolute (POSIX, Windows drive or share), under ~, ./ or ../, or a file: URL. */
const LOCAL_PATH = /^(?:\/|~(?:[\\/]|$)|\.{1,2}(?:[\\/]|$)|[A-Za-z]:[\\/]|\\\\|file:)/;

/** `value` with every local path replaced by its base name: a public card tells nothing of this machine's folders. */
function withoutLocalPaths(value: unknown): unknown {
  // win32's basename splits at "/" and "\\" both, so it serves every form above.
  if (typeof value === "string") return LOCAL_PATH.test(value) ? path.win32.basename(value) : value;
  if (Array.isArray(value)) return value.map(withoutLocalPaths);
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withoutLocalPaths(v)]));
  return value;
}

/** The run's config as the card shows it: secrets redacted (again: the card may be public) and local paths cut to their base names. */
const cardConfig = (record: Readonly<Record<string, unknown>>): unknown => withoutLocalPaths(redactRecord(record));

/** The model card: the hub's metadata and usage, then what this run was and what it reached. */
export function runModelCard(o: Omit<PushAgentsOptions, "log" | "private">, files: string[]): string {
  const evalLine =
    o.evalAfter === undefined
      ? "No final evaluation (no eval_dataset, or eval_interval=0)."
      : `Final evaluation: mean task reward ${o.evalAfter["eval/turn_1/reward_mean"].toFixed(4)} over ${o.evalAfter.samples.length} eval items.`;
  return `${modelCard({ repo: o.repo, baseModel: o.baseModel, files })}\n## The pbrl run\n\nTrainer: \`${o.trainer}\`, one folder per agent (\`agent_<i>\`). ${evalLine}\n\nThe run's config:\n\n\`\`\`json\n${JSON.stringify(cardConfig(o.record), null, 2)}\n\`\`\`\n`;
}

export async function pushAgents(o: PushAgentsOptions): Promise<void> {
  const files = readdirSync(o.agentsDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(o.agentsDir, path.join(e.parentPath, e.name)));
  await writeFileAtomic(path.join(o.agentsDir, "README.md"), runModelCard(o, [...files, "README.md"]));
  o.log(`pbrl: pushing the agents to the hub repo ${o.repo}`);
  const r = await pushToHub({
    dir: o.agentsDir,
    repo: o.repo,
    private: o.private,
    commitMessage: `pbrl ${o.trainer}: trained agents`,
    ...(o.baseModel !== undefined && { baseModel: o.baseModel }),
  });
  for (const s of r.skipped) o.log(`pbrl: not uploaded: ${describeSkipped(s)}`);
  o.log(`pbrl: pushed ${r.files.length} files to ${r.url}${r.commit !== undefined ? ` (commit ${r.commit})` : ""}`);
}

/** A source that is a hub id names the base model on the card; a local folder does not. */
export const hubBaseModel = (source: string | undefined): string | undefined => (source !== undefined && HUB_ID.test(source) ? source : undefined);

/**
 * Training checkpoints of the iterative trainers, one folder per completed round:
 *
 *   <root>/round_NNNN/agents/agent_<i>/   the agent weights (Hugging Face checkpoint)
 *   <root>/round_NNNN/optimizer_<i>.safetensors   AdamW moments and step counts
 *   <root>/round_NNNN/state.json          round, counters, every RNG stream, replay index, metrics cursor
 *   <root>/latest.json                    which round folder is the newest complete one
 *   <root>/initial/agents/agent_<i>/      the weights before round 1 (for the history comparator)
 *
 *   <folder>/manifest.json                size and sha256 of every file in the folder (checked on resume)
 *
 * A round folder is assembled beside its final name and renamed into place, then latest.json
 * is replaced atomically, so a crash at any moment leaves the previous checkpoint usable.
 */
import { existsSync, readdirSync, promises as fs } from "node:fs";
import * as path from "node:path";
import {
  readSafetensors,
  redactRecord,
  replaceDirAtomic,
  writeFileAtomic,
  writeSafetensors,
  type AdamW,
  type AdamWDeferredState,
  type AdamWState,
  type RngStreamsState,
  type TensorToWrite,
} from "@pbrl/core-tensor";
import type { ReplayState } from "@pbrl/preference-data";
import { saveAgents, type ResolvedAgent } from "./agents.js";
import { CheckpointError } from "./checkpoint-error.js";
import { verifyManifest, writeManifest } from "./checkpoint-manifest.js";
import type { TrainingCounters } from "./training-counters.js";

export { CheckpointError };

export interface TrainingState {
  format: "pbrl-training-checkpoint/1";
  trainer: string;
  /** The last completed round (1-based). */
  round: number;
  counters: TrainingCounters;
  rng: RngStreamsState;
  replay: ReplayState;
  /** Lines of metrics.jsonl written when the round completed. */
  metricsLines: number;
  numAgents: number;
  seed: number;
  /** The run's config as config.json has it, to name what a resume changes; saveTrainingCheckpoint writes it redacted, whoever built it. */
  config?: Record<string, unknown>;
}

export const roundDirName = (round: number) => `round_${String(round).padStart(4, "0")}`;
const ROUND_DIR = /^round_\d{4,}$/;

async function saveOptimizer(file: string, state: AdamWDeferredState): Promise<void> {
  const tensors = new Map<string, TensorToWrite>();
  for (const [name, m] of state.expAvg) tensors.set(`exp_avg.${name}`, { tensor: m, dtype: "F32" });
  for (const [name, v] of state.expAvgSq) tensors.set(`exp_avg_sq.${name}`, { tensor: v, dtype: "F32" });
  const meta = { lr: state.lr, betas: state.betas, eps: state.eps, weightDecay: state.weightDecay, steps: state.steps };
  await writeSafetensors(file, tensors, { pbrl_adamw: JSON.stringify(meta) });
}

async function loadOptimizer(file: string): Promise<AdamWState> {
  const f = await readSafetensors(file);
  const metaText = f.metadata["pbrl_adamw"];
  if (metaText === undefined) throw new CheckpointError(`${file} is not a pbrl optimizer state (no pbrl_adamw metadata)`);
  const meta = JSON.parse(metaText) as Omit<AdamWState, "expAvg" | "expAvgSq">;
  const expAvg = new Map<string, Float32Array>();
  const expAvgSq = new Map<string, Float32Array>();
  for (const [key, t] of f.tensors) {
    const data = t.tensor.data as Float32Array;
    if (key.startsWith("exp_avg_sq.")) expAvgSq.set(key.slice("exp_avg_sq.".length), data);
    else if (key.startsWith("exp_avg.")) expAvg.set(key.slice("exp_avg.".length), data);
  }
  return { ...meta, expAvg, expAvgSq };
}

/** The weights before round 1, kept for the history comparator. Written once per run. */
export async function saveInitialPolicies(root: string, agents: readonly ResolvedAgent[]): Promise<void> {
  await replaceDirAtomic(path.join(root, "initial"), async (tmp) => {
    await saveAgents(path.join(tmp, "agents"), agents);
    await writeManifest(tmp);
  });
}

/** Folder holding agent_<i> with the weights round `round` started from. */
export function policiesAtStartOf(root: string, round: number): string {
  return round <= 1 ? path.join(root, "initial", "agents") : path.join(root, roundDirName(round - 1), "agents");
}

/** `extra` writes further state into the folder being assembled (e.g. MARLHF's reward model). */
export async function saveTrainingCheckpoint(
  root: string,
  state: TrainingState,
  agents: readonly ResolvedAgent[],
  optimizers: readonly AdamW[],
  extra?: (dir: string) => Promise<void>,
): Promise<string> {
  const name = roundDirName(state.round);
  await replaceDirAtomic(path.join(root, name), async (tmp) => {
    await saveAgents(path.join(tmp, "agents"), agents);
    for (const [i, o] of optimizers.entries()) await saveOptimizer(path.join(tmp, `optimizer_${i}.safetensors`), o.deferredState());
    await extra?.(tmp);
    const record = state.config === undefined ? state : { ...state, config: redactRecord(state.config) };
    await writeFileAtomic(path.join(tmp, "state.json"), JSON.stringify(record, null, 2) + "\n");
    await writeManifest(tmp);
  });
  await writeFileAtomic(path.join(root, "latest.json"), JSON.stringify({ round: state.round, dir: name }, null, 2) + "\n");
  return path.join(root, name);
}

export interface LoadedCheckpoint {
  dir: string;
  state: TrainingState;
  /** agent_<i> folders with the weights. */
  agentsDir: string;
  optimizers: AdamWState[];
}

async function readJson(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    // Stryker disable next-line StringLiteral: without an encoding the read gives a Buffer, which JSON.parse reads as the same UTF-8 text
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    // the callers have seen it exists: a folder in its place, or a file that may not be read
    throw new CheckpointError(`${what}: ${file} cannot be read (${(err as Error).message})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(`${what}: ${file} is not valid JSON (${(err as Error).message})`);
  }
}

/**
 * Finds and reads a checkpoint: `true` means the newest one under `root`; a string is a round
 * folder, or a checkpoints root (then its newest round).
 */
export async function loadTrainingCheckpoint(spec: string | true, root: string): Promise<LoadedCheckpoint> {
  let dir: string;
  const latestOf = async (r: string): Promise<string> => {
    const file = path.join(r, "latest.json");
    if (!existsSync(file))
      throw new CheckpointError(
        `resume_from_checkpoint: no checkpoint under ${r} (latest.json is missing); nothing to resume — start without resume_from_checkpoint`,
      );
    let latest: { dir?: unknown };
    try {
      latest = (await readJson(file, "resume_from_checkpoint")) as { dir?: unknown };
    } catch (err) {
      throw new CheckpointError(`${(err as Error).message}. ${await newestIntactHint(r)}`);
    }
    if (typeof latest?.dir !== "string" || !ROUND_DIR.test(latest.dir)) {
      throw new CheckpointError(
        `resume_from_checkpoint: ${file} names ${JSON.stringify(latest?.dir)}, which is not a round folder of ${r} (round_NNNN). ${await newestIntactHint(r)}`,
      );
    }
    return path.join(r, latest.dir);
  };
  if (spec === true) dir = await latestOf(root);
  else if (!existsSync(spec)) throw new CheckpointError(`resume_from_checkpoint: ${spec} does not exist`);
  else if (existsSync(path.join(spec, "latest.json"))) dir = await latestOf(spec);
  else dir = spec;
  if (!existsSync(path.join(dir, "state.json")))
    throw new CheckpointError(`resume_from_checkpoint: ${dir} is not a pbrl training checkpoint (it has no state.json)`);
  await verifyManifest(dir, "resume_from_checkpoint");
  const initial = path.join(path.dirname(dir), "initial");
  if (existsSync(initial)) await verifyManifest(initial, "resume_from_checkpoint");
  const state = (await readJson(path.join(dir, "state.json"), "resume_from_checkpoint")) as TrainingState;
  if (state.format !== "pbrl-training-checkpoint/1")
    throw new CheckpointError(`resume_from_checkpoint: ${dir}/state.json has format ${JSON.stringify(state.format)}, expected "pbrl-training-checkpoint/1"`);
  const optimizers: AdamWState[] = [];
  for (let i = 0; i < state.numAgents; i++) {
    const file = path.join(dir, `optimizer_${i}.safetensors`);
    if (!existsSync(file)) throw new CheckpointError(`resume_from_checkpoint: ${file} is missing`);
    optimizers.push(await loadOptimizer(file));
  }
  const agentsDir = path.join(dir, "agents");
  for (let i = 0; i < state.numAgents; i++)
    if (!existsSync(path.join(agentsDir, `agent_${i}`))) throw new CheckpointError(`resume_from_checkpoint: ${path.join(agentsDir, `agent_${i}`)} is missing`);
  return { dir, state, agentsDir, optimizers };
}

/** Names the newest round folder under `root` whose files match its manifest, for an error's advice. */
async function newestIntactHint(root: string): Promise<string> {
  // root holds the latest.json that sent the resume here
  const rounds = readdirSync(root).filter((n) => ROUND_DIR.test(n));
  // Stryker disable next-line CallExpression,MethodExpression: Node's readdir lists names in byte order already (libuv's scandir sorts them); the sort states the order this relies on
  rounds.sort();
  rounds.reverse(); // newest first
  for (const name of rounds) {
    const dir = path.join(root, name);
    try {
      // Stryker disable next-line StringLiteral: the message this names is caught below and never shown
      await verifyManifest(dir, "");
      return `The newest intact checkpoint is ${dir}: set resume_from_checkpoint to that folder to continue from it`;
    } catch {
      // damaged or incomplete: try the one before
    }
  }
  return "No intact round folder was found under it; start the run again";
}

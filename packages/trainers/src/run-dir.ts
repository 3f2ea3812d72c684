/**
 * The run's output_dir: decided before anything is written (planRunDir reads only), then opened
 * under the run lock (openRunDir). A fresh run never writes over another run's files unless
 * overwrite_output_dir=true, and then only the files a pbrl run makes; other files in the folder
 * are left alone.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { acquireRunLock } from "./run-lock.js";

export class RunDirError extends Error {
  override name = "RunDirError";
}

/** What a pbrl run writes in its output_dir (policy_checkpoint_dir and preference_replay_dir may move two of them). */
export const RUN_OUTPUTS = [
  "config.json",
  "metrics.jsonl",
  "preference_pairs.json",
  "agents",
  "checkpoints",
  "preference_replay",
  "reward_distributions",
  "reward_model",
  "tensorboard",
  "report.html",
] as const;

export interface RunDirPlan {
  /** Continue from the latest checkpoint. */
  resume: boolean;
  /** Earlier run outputs this run replaces (overwrite_output_dir, or a run that never completed a round). */
  replace: string[];
}

export interface RunDirOptions {
  outputDir: string;
  /** policy_checkpoint_dir / preference_replay_dir when set outside output_dir's defaults. */
  extraDirs?: readonly string[];
  /** resume_from_checkpoint=true: continue output_dir's own latest checkpoint. */
  resumeLatest: boolean;
  /** The checkpoints folder whose latest.json resumeLatest continues from. */
  checkpointsDir?: string;
  overwrite: boolean;
  trainer: string;
  log?: (line: string) => void;
}

const isNonEmptyDir = (p: string) => existsSync(p) && statSync(p).isDirectory() && readdirSync(p).length > 0;

function savedTrainer(outputDir: string): string | undefined {
  try {
    const t = (JSON.parse(readFileSync(path.join(outputDir, "config.json"), "utf8")) as { trainer?: unknown }).trainer;
    return typeof t === "string" ? t : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads output_dir and decides how the run uses it; writes nothing. A run that trained nothing
 * yet (no checkpoint, no saved agents: it failed or was killed in its first round) is started
 * again in place; one with results is only resumed, or replaced with overwrite_output_dir=true.
 */
export function planRunDir(o: RunDirOptions): RunDirPlan {
  if (existsSync(o.outputDir) && !statSync(o.outputDir).isDirectory()) {
    throw new RunDirError(`output_dir ${o.outputDir} is a file, not a folder; choose a folder path for the run's outputs`);
  }
  const found = [
    ...RUN_OUTPUTS.map((n) => path.join(o.outputDir, n)).filter((p) => existsSync(p)),
    ...(o.extraDirs ?? []).filter((d) => isNonEmptyDir(d) && !d.startsWith(path.join(o.outputDir, path.sep))),
  ];
  const hasCheckpoint = o.checkpointsDir !== undefined && existsSync(path.join(o.checkpointsDir, "latest.json"));
  const results = ["agents", "reward_model"].map((n) => path.join(o.outputDir, n)).filter((p) => existsSync(p));
  if (o.resumeLatest && hasCheckpoint) return { resume: true, replace: [] };
  const trainer = savedTrainer(o.outputDir);
  const names = (ps: readonly string[]) => ps.map((p) => path.relative(o.outputDir, p) || p).join(", ");
  if (found.length === 0) {
    if (o.resumeLatest)
      throw new RunDirError(`resume_from_checkpoint=true: ${o.outputDir} holds no run to resume; check output_dir, or start without resume_from_checkpoint`);
    return { resume: false, replace: [] };
  }
  if (o.overwrite && !o.resumeLatest) return { resume: false, replace: found };
  if (!hasCheckpoint && results.length === 0 && trainer === o.trainer) {
    o.log?.(`pbrl: ${o.outputDir} holds a ${trainer} run that completed no round (${names(found)}); starting it again from the beginning`);
    return { resume: false, replace: found };
  }
  if (o.resumeLatest) {
    throw new RunDirError(
      `resume_from_checkpoint=true: ${o.outputDir} has no checkpoint to resume (${path.join(o.checkpointsDir ?? o.outputDir, "latest.json")} is missing) and holds ${trainer === o.trainer ? "a finished run" : trainer === undefined ? "files of a run whose config.json is missing or damaged" : `a ${trainer} run, not a ${o.trainer} run`} (${names(found)}); choose another output_dir, or start without resume_from_checkpoint and with overwrite_output_dir=true to replace it`,
    );
  }
  throw new RunDirError(
    `output_dir ${o.outputDir} already holds a run's results (${names(found)}); pbrl does not write a new run over them. Resume that run with resume_from_checkpoint=true, choose another output_dir, or set overwrite_output_dir=true to replace those files (other files in the folder are left alone)`,
  );
}

// Temporaries of core-tensor's atomic writers (`.<name>.tmp-<pid>-<hex>`, `.<name>.old-<pid>-<hex>`).
const TEMP = /^\..+\.(?:tmp|old)-(\d+)-[0-9a-f]{8}$/;

/** Removes what atomic writes of killed runs left behind (only pbrl's temporary names, only of other processes). */
function removeStaleTemps(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const m = TEMP.exec(e.name);
    if (m !== null && Number(m[1]) !== process.pid) rmSync(path.join(dir, e.name), { recursive: true, force: true });
    else if (m === null && e.isDirectory()) removeStaleTemps(path.join(dir, e.name));
  }
}

/**
 * Creates output_dir, takes the run lock, clears what killed runs left half-written, and removes
 * the earlier outputs the plan replaces. Returns the function that releases the lock.
 */
export function openRunDir(o: RunDirOptions, plan: RunDirPlan): () => void {
  mkdirSync(o.outputDir, { recursive: true });
  const release = acquireRunLock(o.outputDir, o.log);
  try {
    // Checked again under the lock: another run may have started between planning and now.
    const again = planRunDir({ ...o, resumeLatest: plan.resume, overwrite: true, log: undefined });
    if (!plan.resume && again.replace.some((p) => !plan.replace.includes(p))) {
      throw new RunDirError(`output_dir ${o.outputDir} received another run's files while this run was starting; choose another output_dir`);
    }
    for (const d of [o.outputDir, ...(o.extraDirs ?? [])]) removeStaleTemps(d);
    for (const p of plan.replace) rmSync(p, { recursive: true, force: true });
    if (plan.replace.length > 0)
      o.log?.(`pbrl: replaced the earlier run's ${plan.replace.map((p) => path.relative(o.outputDir, p) || p).join(", ")} in ${o.outputDir}`);
  } catch (err) {
    release();
    throw err;
  }
  return release;
}

/**
 * The `parallel_training.ddp` measurement of `pbrl bench`: the same two-round demo run (two
 * agents, iterative MADPO on the embedded task) as real `pbrl train` processes three ways — one
 * process with every core (parallel_training="none"), one process with a worker thread per agent
 * ("mp"), and one rank per agent launched with --nproc_per_node ("ddp"), the last two with a
 * share of the cores each — and the second round of each timed from its metrics.jsonl.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import * as path from "node:path";
import { BUILTIN_TASKS } from "../builtins.js";
import { DEMO_DEFAULTS, DEMO_MODEL_DIR } from "../commands/demo.js";
import type { CliIO } from "../io.js";
import { runChild, tail } from "./child.js";
import type { DemoWorkload } from "./demo-rounds.js";

export type RoundMode = "none" | "mp" | "ddp";
const MODES: readonly RoundMode[] = ["none", "mp", "ddp"];

export interface DdpRoundResult {
  workload: DemoWorkload;
  /** Ranks of the ddp run (one per agent), and worker threads of the mp run. */
  ranks: number;
  /** Compute threads (OMP_NUM_THREADS, PBRL_NATIVE_THREADS): of the one process, of each mp worker, of each rank. */
  threads: Record<RoundMode, number>;
  /**
   * Seconds of each run's second round (its first warms up), from the last update logged in
   * round 1 to the last in round 2: round 1's checkpoint, round 2's collection and training.
   */
  round_s: Record<RoundMode, number>;
  /** round_s.none ÷ round_s of mp and of ddp: > 1 means faster than one process with every core. */
  speedup: { mp: number; ddp: number };
}

/**
 * Seconds of round 2 in a metrics.jsonl: the elapsed_s of its last `train` record minus that of
 * round 1's last (every update is logged: logging_steps=1).
 */
export function secondRoundSeconds(metricsJsonl: string): number {
  const last = [0, 0];
  for (const line of metricsJsonl.split("\n")) {
    if (line.trim() === "") continue;
    const r = JSON.parse(line) as { kind?: string; round?: number; elapsed_s?: number };
    if (r.kind === "train" && (r.round === 1 || r.round === 2) && typeof r.elapsed_s === "number")
      last[r.round - 1] = Math.max(last[r.round - 1]!, r.elapsed_s);
  }
  if (last[0] === 0 || last[1] === 0) throw new Error("metrics.jsonl has no train record of round 1 or of round 2");
  return last[1]! - last[0]!;
}

/** The demo's settings as `pbrl train` key=value arguments, sized to `w`, two rounds, no evaluation. */
function demoRunArgs(dir: string, w: DemoWorkload): string[] {
  const task = BUILTIN_TASKS["summary_expansion"]!;
  const data = path.join(dir, "train.jsonl");
  writeFileSync(
    data,
    `${task
      .load()
      .train.slice(0, w.train_texts)
      .map((item) => JSON.stringify(item))
      .join("\n")}\n`,
  );
  // The demo's settings but its own output folder; evaluation off, as in the bench's demo round.
  const { output_dir: _, ...demo } = DEMO_DEFAULTS;
  const settings = {
    ...demo,
    num_iterations: 2,
    preference_num_candidates: w.preference_num_candidates,
    num_train_epochs: w.num_train_epochs,
    max_new_tokens: w.max_new_tokens,
    eval_interval: 0,
    logging_steps: 1,
    backend: "libtorch",
    verbose: false,
  };
  return [
    "trainer=madpo_iter",
    `agent_model=${DEMO_MODEL_DIR}`,
    `train_dataset=${data}`,
    "reward_func=summary_expansion",
    ...Object.entries(settings).map(([k, v]) => `${k}=${v === null ? "null" : String(v)}`),
  ];
}

/**
 * Runs the three ways one after another with `entry` (the compiled CLI) and returns their
 * second rounds' seconds; the runs' folders are removed afterwards.
 */
export async function measureDdpRound(entry: string, w: DemoWorkload, say: (msg: string) => void): Promise<DdpRoundResult | { failed: string }> {
  const cores = availableParallelism();
  const ranks = 2;
  const share = Math.max(1, Math.floor(cores / ranks));
  const threads: Record<RoundMode, number> = { none: cores, mp: share, ddp: share };
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-bench-ddp-"));
  const quiet: CliIO = { out: () => {}, err: () => {}, isTTY: false };
  try {
    const args = demoRunArgs(dir, w);
    const round_s = {} as Record<RoundMode, number>;
    for (const mode of MODES) {
      const out = path.join(dir, mode);
      const extra: Record<RoundMode, string[]> = {
        none: [],
        mp: ["parallel_training=mp", "agent_devices=cpu"],
        ddp: ["parallel_training=ddp"],
      };
      const argv = [entry, "train", ...(mode === "ddp" ? ["--nproc_per_node", String(ranks)] : []), ...args, ...extra[mode], `output_dir=${out}`];
      const t = String(threads[mode]);
      const r = await runChild(process.execPath, argv, quiet, { OMP_NUM_THREADS: t, PBRL_NATIVE_THREADS: t });
      if (r.code !== 0) return { failed: `the ${mode} run exited with ${r.code}: ${tail(r.stderr)}` };
      round_s[mode] = secondRoundSeconds(readFileSync(path.join(out, "metrics.jsonl"), "utf8"));
      say(
        `parallel_training: demo round 2 with parallel_training=${mode} (${threads[mode]} thread${threads[mode] === 1 ? "" : "s"}${mode === "none" ? "" : " each"}): ${round_s[mode].toFixed(2)} s`,
      );
    }
    return { workload: w, ranks, threads, round_s, speedup: { mp: round_s.none / round_s.mp, ddp: round_s.none / round_s.ddp } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

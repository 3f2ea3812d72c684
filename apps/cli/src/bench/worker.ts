/**
 * One backend's measurements. `pbrl bench` runs this in a child process per backend (the hidden
 * `pbrl bench --worker SPEC` mode), so peak RSS belongs to that backend alone.
 */
import { distributedAvailable, MemoryBudgetError, setComputePrecision, useBackend, type BackendName, type ComputePrecision } from "@pbrl/core-tensor";
import type { CliIO } from "../io.js";
import { demoRoundWorkload, flatnessLine, runDemoRound, runFlatness, type DemoRoundResult, type FlatnessResult } from "./demo-rounds.js";
import { modelWorkloads, type ModelResult } from "./model-workloads.js";
import { compiledCliEntry } from "./child.js";
import { measureDdpRound, type DdpRoundResult } from "./ddp-round.js";
import { measureParallel, type ParallelResult } from "./parallel-agents.js";
import { sourceConfig, type ModelSource, type Preset } from "./presets.js";
import type { Scale, Workloads } from "./workloads.js";

export interface WorkerSpec {
  backend: BackendName;
  /** bf16: setComputePrecision("bf16") after useBackend (libtorch only). */
  precision: ComputePrecision;
  model: ModelSource;
  scale: Scale;
  workloads: Workloads;
  /** --steps: also the number of timed MADPO updates of parallel_training. */
  steps: number;
  /** Time one round of the embedded demo after the model workloads (off with --no-demo-round). */
  demo_round: boolean;
  /** --rounds N: run N small demo rounds and report the state after each; null when not asked. */
  rounds: number | null;
}

export type BackendResult = {
  backend: BackendName;
  precision: ComputePrecision;
  /** The backend's one-line description (kernels, threads, tfjs version). */
  description: string;
  /** "child process" normally; "in-process" when the CLI runs from its TypeScript sources (tests). */
  isolation: "child process" | "in-process";
  pid: number;
  /**
   * Two agents' generation and MADPO updates in this thread and in one worker thread per agent
   * (parallel_training="mp"), and a demo round in one process, with mp and on one rank per agent
   * (`ddp`, libtorch only); or why it did not run.
   */
  parallel_training: (ParallelResult & { ddp: DdpRoundResult | { skipped: string } | { failed: string } }) | { skipped: string };
  /** One round of the embedded demo (collection + MADPO training), or why it did not run. */
  demo_round: DemoRoundResult | { skipped: string };
  /** With --rounds N only: the state after each of N demo rounds, and whether it stayed flat. */
  flatness?: FlatnessResult;
  /** Wall and CPU seconds of the whole worker, demo rounds included. */
  wall_s: number;
  /** CPU time (user + system) of this process: well below wall_s × threads means other work competed for the CPU. */
  cpu_s: number;
} & ModelResult;

/**
 * A column the backend cannot hold: the MemoryBudgetError pbrl raises before building the model
 * (or, as a second line of defence, when a wasm kernel ran out of heap), instead of a crash.
 */
export interface NotMeasured {
  backend: BackendName;
  precision: ComputePrecision;
  not_measured: string;
  error: "MemoryBudgetError";
}

export type WorkerResult = BackendResult | NotMeasured;

const MB = 1024 * 1024;

function isMemoryBudgetError(err: unknown): err is Error {
  return err instanceof MemoryBudgetError || (err instanceof Error && err.name === "MemoryBudgetError");
}

export async function runBenchWorker(spec: WorkerSpec, io: CliIO, isolation: BackendResult["isolation"]): Promise<WorkerResult> {
  const start = performance.now();
  const info = await useBackend(spec.backend);
  const tag = spec.precision === "bf16" ? `${spec.backend} bf16` : spec.backend;
  const say = (msg: string) => io.err(`pbrl bench [${tag}]: ${msg}\n`);
  say(info.description);
  if (spec.precision === "bf16") setComputePrecision("bf16");
  try {
    const config = sourceConfig(spec.model);
    let model: ModelResult;
    try {
      model = await modelWorkloads(spec.model, config, spec.workloads, spec.precision, say);
    } catch (err) {
      if (!isMemoryBudgetError(err)) throw err;
      say(`not measured: ${err.message.split("\n")[0]}`);
      return { backend: spec.backend, precision: spec.precision, not_measured: err.message, error: "MemoryBudgetError" };
    }
    const parallel = await timeParallel(spec, say);
    const demoRound = await timeDemoRound(spec, say);
    // The demo's trainers compute in float32: --rounds belongs to the float32 column.
    const flatness = spec.rounds !== null && spec.precision === "float32" ? await measureFlatness(spec.backend, spec.rounds, say) : undefined;
    return {
      backend: spec.backend,
      precision: spec.precision,
      description: info.description,
      isolation,
      pid: process.pid,
      ...model,
      parallel_training: parallel,
      demo_round: demoRound,
      ...(flatness !== undefined ? { flatness } : {}),
      wall_s: (performance.now() - start) / 1000,
      cpu_s: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    };
  } finally {
    // In-process (tests) the next column or test must start in float32.
    if (spec.precision === "bf16") setComputePrecision("float32");
  }
}

/** Why the demo-level measurements do not run for this column, or undefined when they do. */
function notForThisColumn(spec: WorkerSpec, what: string): string | undefined {
  if (spec.precision === "bf16") return `${what} runs pbrl's trainers in float32: measured in the float32 column`;
  if ("dir" in spec.model || spec.scale === "real")
    return `${what} is measured with --preset default or tiny (it does not depend on a real-size model, or would take minutes with one)`;
  return undefined;
}

async function timeParallel(spec: WorkerSpec, say: (msg: string) => void): Promise<BackendResult["parallel_training"]> {
  const why = notForThisColumn(spec, "parallel_training");
  if (why !== undefined || !("preset" in spec.model)) return { skipped: why ?? "--model" };
  // The pure-JS kernels would take over ten minutes for this work on the default model.
  if (spec.backend === "cpu" && spec.model.preset === "default")
    return { skipped: "cpu backend with the default preset (pure-JS kernels: over ten minutes); --preset tiny measures it" };
  const r = await measureParallel(spec.model.preset, spec.backend, spec.steps);
  const w = r.workload;
  const t = `${r.threads_per_worker} thread${r.threads_per_worker === 1 ? "" : "s"} each`;
  say(
    `parallel_training: sampling ${w.gen_prompts}×${w.gen_candidates} candidates per agent: ${r.generation.sequential_s.toFixed(2)} s in this thread, ${r.generation.mp_s.toFixed(2)} s in worker threads (${t}): ${r.generation.speedup.toFixed(2)}×`,
  );
  say(
    `parallel_training: MADPO update of ${w.agents} agents (${w.pairs_per_update} pairs): ${r.update.sequential_s.toFixed(2)} s in this thread, ${r.update.mp_s.toFixed(2)} s in worker threads: ${r.update.speedup.toFixed(2)}×`,
  );
  say(
    `parallel_training: MARLHF policy-gradient update of ${w.agents} agents (${w.pairs_per_update} items × ${r.rl_update.generations} samples): ${r.rl_update.sequential_s.toFixed(2)} s in this thread, ${r.rl_update.mp_s.toFixed(2)} s in worker threads: ${r.rl_update.speedup.toFixed(2)}×`,
  );
  return { ...r, ddp: await timeDdpRound(spec.model.preset, spec.backend, say) };
}

/** A demo round as `pbrl train` processes: one, with mp, and on 2 ranks (see ddp-round.ts). */
async function timeDdpRound(
  preset: Preset,
  backend: BackendName,
  say: (msg: string) => void,
): Promise<DdpRoundResult | { skipped: string } | { failed: string }> {
  if (backend !== "libtorch") return { skipped: "parallel_training=ddp runs on the libtorch backend: measured in its float32 column" };
  const groups = distributedAvailable();
  if (!groups.ok) return { skipped: `parallel_training=ddp needs process groups: ${groups.reason}` };
  const entry = compiledCliEntry();
  if (entry === undefined)
    return {
      skipped: "parallel_training=ddp starts `pbrl train` ranks, which needs the CLI as compiled JavaScript (this bench runs from the TypeScript sources)",
    };
  const r = await measureDdpRound(entry, demoRoundWorkload(preset, backend), say);
  if ("failed" in r) say(`parallel_training: ddp round not measured: ${r.failed}`);
  else say(`parallel_training: demo round 2 on ${r.ranks} ranks ${r.speedup.ddp.toFixed(2)}× one process, mp ${r.speedup.mp.toFixed(2)}×`);
  return r;
}

async function timeDemoRound(spec: WorkerSpec, say: (msg: string) => void): Promise<BackendResult["demo_round"]> {
  if (!spec.demo_round) return { skipped: "--no-demo-round" };
  const why = notForThisColumn(spec, "the demo round");
  if (why !== undefined || !("preset" in spec.model)) return { skipped: why ?? "--model" };
  const w = demoRoundWorkload(spec.model.preset, spec.backend);
  say(`demo round: ${w.train_texts} texts × ${w.preference_num_candidates} candidates, ${w.num_train_epochs} epoch${w.num_train_epochs === 1 ? "" : "s"}…`);
  const r = await runDemoRound(spec.backend, w);
  say(`demo round: ${r.demo_round_s.toFixed(1)} s (${r.demo_run_s.toFixed(1)} s with loading and saving the agents), ${r.pairs} pairs, ${r.updates} updates`);
  return r;
}

async function measureFlatness(backend: BackendName, rounds: number, say: (msg: string) => void): Promise<FlatnessResult> {
  const f = await runFlatness(backend, rounds, (p) =>
    say(
      `flatness round ${p.round}/${rounds}: ${p.round_s.toFixed(1)} s, ${p.live_tensors} live tensors, tf memory ${(p.tf_memory_bytes / MB).toFixed(2)} MB, RSS ${p.rss_mb.toFixed(1)} MB`,
    ),
  );
  say(flatnessLine(f));
  return f;
}

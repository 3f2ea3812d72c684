/**
 * The demo measurements of `pbrl bench`: rounds of the embedded demo — iterative MADPO
 * (MADPOIterTrainer) on the built-in summary/expansion task with two agents from the shipped
 * demo model and `pbrl demo`'s settings — timed, with the tensor and memory state after each
 * round. Every round does real collection (agents and the history comparator answer the texts,
 * the task reward labels them) and real MADPO training.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { liveTensorCount, tf, type BackendName } from "@pbrl/core-tensor";
import { MADPOIterConfig, MADPOIterTrainer, type IterTrainResult } from "@pbrl/trainers";
import { BUILTIN_TASKS } from "../builtins.js";
import { DEMO_DEFAULTS, DEMO_MODEL_DIR } from "../commands/demo.js";
import type { Preset } from "./presets.js";

/** Per-round budget of a demo run, snake_case because it is printed as JSON next to the results. */
export interface DemoWorkload {
  /** Training texts each round collects on: the first N of the demo task's. */
  train_texts: number;
  preference_num_candidates: number;
  num_train_epochs: number;
  max_new_tokens: number;
}

const MB = 1024 * 1024;

/** The round `pbrl demo` runs: its defaults on every training text. */
export function fullDemoWorkload(): DemoWorkload {
  const d = MADPOIterConfig(DEMO_DEFAULTS);
  const texts = BUILTIN_TASKS["summary_expansion"]!.load().train.length;
  return { train_texts: texts, preference_num_candidates: d.preference_num_candidates, num_train_epochs: d.num_train_epochs, max_new_tokens: d.max_new_tokens };
}

/**
 * A round an eighth of the demo's texts, half its candidates and one epoch: about 1/16 of its
 * collection and 1/32 of its updates, so 20 rounds take minutes and a test seconds, while every
 * round still collects pairs and trains on them. Generation length stays the demo's.
 */
export function smallDemoWorkload(): DemoWorkload {
  return { ...fullDemoWorkload(), train_texts: 8, preference_num_candidates: 4, num_train_epochs: 1 };
}

/**
 * The default preset times the demo's own round; tiny a small one (a smoke test). The cpu
 * backend always runs the small one: its pure-JS kernels take about 3 minutes for it on two
 * cores, so the demo's own round would take most of an hour.
 */
export function demoRoundWorkload(preset: Preset, backend: BackendName): DemoWorkload {
  return preset === "default" && backend !== "cpu" ? fullDemoWorkload() : smallDemoWorkload();
}

/** The state after one round, taken at its end (see {@link RoundProbe}). */
export interface RoundSample {
  round: number;
  /** Wall seconds of the round: collection, replay selection, MADPO training, its checkpoint. */
  round_s: number;
  /** Pairs the round's comparisons produced, and pairs it trained on (replay included). */
  pairs: number;
  train_pairs: number;
  /** liveTensorCount() (tf.memory().numTensors). */
  live_tensors: number;
  /** tf.memory().numBytes. */
  tf_memory_bytes: number;
  /** process.memoryUsage().rss, after a full garbage collection when node exposes gc(). */
  rss_mb: number;
  /**
   * What RSS is made of, to tell a leak from allocator noise: the JS heap in use (heapUsed) and
   * memory outside it (external: the wasm heap, which only grows, and array buffers).
   */
  js_heap_mb: number;
  external_mb: number;
}

type Probe = Omit<RoundSample, "pairs" | "train_pairs">;

function memoryNow(): Pick<RoundSample, "rss_mb" | "js_heap_mb" | "external_mb"> {
  const m = process.memoryUsage();
  return { rss_mb: m.rss / MB, js_heap_mb: m.heapUsed / MB, external_mb: m.external / MB };
}

/**
 * A probe at the round boundaries, through the trainer's round callbacks: the clock starts when a
 * round's collection does (the comparator holds that round's weights) and stops when its
 * checkpoint is written, also for a round without pairs. The history comparator frees its
 * weights before that, so the sample sees exactly what the run keeps across rounds: agents,
 * optimizer moments, replay index, metrics.
 */
class RoundProbe {
  readonly probes: Probe[] = [];
  private roundStart = 0;

  constructor(private readonly onRound: (p: Probe) => void = () => {}) {}

  start(): void {
    this.roundStart = performance.now();
  }

  async end(round: number): Promise<void> {
    const roundS = (performance.now() - this.roundStart) / 1000;
    // Garbage awaiting collection (checkpoint buffers, the comparator's freed weights) swings
    // RSS by tens of MB between rounds; collected first, RSS shows what the run holds. Array
    // buffers are released after the collection, on a later tick, hence gc, a tick, gc.
    if (globalThis.gc !== undefined) {
      globalThis.gc();
      await new Promise((r) => setImmediate(r));
      globalThis.gc();
    }
    const p: Probe = { round, round_s: roundS, live_tensors: liveTensorCount(), tf_memory_bytes: tf.memory().numBytes, ...memoryNow() };
    this.probes.push(p);
    this.onRound(p);
  }
}

export interface DemoRun {
  rounds: RoundSample[];
  updates: number;
  /** Wall seconds of the whole run: loading the agents, the rounds, saving the trained agents. */
  run_s: number;
}

/**
 * Runs `rounds` demo rounds on the current backend in a temporary output folder (deleted
 * afterwards). Evaluation is off (eval_interval=0, no eval texts): the bench times collection
 * and training, and an eval pass would add generation that is not part of a round.
 */
export async function runDemoRounds(o: { backend: BackendName; rounds: number; workload: DemoWorkload; onRound?: (s: Probe) => void }): Promise<DemoRun> {
  const task = BUILTIN_TASKS["summary_expansion"]!;
  const w = o.workload;
  const outputDir = mkdtempSync(path.join(tmpdir(), "pbrl-bench-demo-"));
  const args = MADPOIterConfig({
    ...DEMO_DEFAULTS,
    output_dir: outputDir,
    num_iterations: o.rounds,
    preference_num_candidates: w.preference_num_candidates,
    num_train_epochs: w.num_train_epochs,
    max_new_tokens: w.max_new_tokens,
    eval_interval: 0,
    // The worker has selected the backend already; "auto" could switch to another one.
    backend: o.backend,
    verbose: false,
  });
  // The bench prints its own line per round (onRound); the trainer's lines would interleave.
  const probe = new RoundProbe(o.onRound);
  const trainer = new MADPOIterTrainer({
    agentModel: DEMO_MODEL_DIR,
    trainDataset: task.load().train.slice(0, w.train_texts),
    rewardFunc: task.rewardFunc,
    formatters: task.formatters,
    args,
    log: () => {},
    handleSignals: false,
    onRoundStart: () => probe.start(),
    onRoundEnd: (summary) => probe.end(summary.round),
  });
  try {
    const t0 = performance.now();
    const result = await trainer.train();
    return { rounds: withPairs(probe.probes, result), updates: result.updates, run_s: (performance.now() - t0) / 1000 };
  } finally {
    trainer.dispose();
    rmSync(outputDir, { recursive: true, force: true });
  }
}

function withPairs(probes: readonly Probe[], result: IterTrainResult): RoundSample[] {
  if (probes.length !== result.rounds.length) throw new Error(`demo run: probed ${probes.length} rounds, the trainer reports ${result.rounds.length}`);
  return probes.map((p, i) => ({ ...p, pairs: result.rounds[i]!.pairs, train_pairs: result.rounds[i]!.trainPairs }));
}

/** `demo_round` of a backend result: one demo round, timed. */
export interface DemoRoundResult {
  /** Wall seconds of the round (collection + MADPO training + its checkpoint). */
  demo_round_s: number;
  /** The whole one-round run, including loading the two agents and saving them. */
  demo_run_s: number;
  pairs: number;
  train_pairs: number;
  updates: number;
  workload: DemoWorkload;
}

export async function runDemoRound(backend: BackendName, workload: DemoWorkload): Promise<DemoRoundResult> {
  const run = await runDemoRounds({ backend, rounds: 1, workload });
  const r = run.rounds[0]!;
  return { demo_round_s: r.round_s, demo_run_s: run.run_s, pairs: r.pairs, train_pairs: r.train_pairs, updates: run.updates, workload };
}

/**
 * A leak of any per-round copy of what a demo run holds — one agent's weights are 3.9 MB of
 * float32, its AdamW moments 7.9 MB — grows RSS by at least 3.9 MB per round, while what the
 * run legitimately adds per round (metrics lines, a replay-index entry) is tens of kilobytes:
 * the JS heap grew 0.07 MB per round over 20 small rounds. 2 MB per round, half the smallest
 * such leak, is the threshold. RSS itself, even after a full GC, jitters by ±20 MB between
 * rounds (malloc arenas, wasm heap pages touched for the first time), so the growth per round
 * is the least-squares slope over rounds 2 … N rather than the difference of two samples, which
 * one jittery endpoint swings by 1–2 MB per round. Measured over 20 rounds on two shared
 * cores: wasm 0.3 MB per round; native 0.7 to 2.1 in four runs, with tensors, the JS heap and
 * the wasm heap flat, so that growth is outside them (the native addon, OpenBLAS or malloc).
 * With few rounds the jitter alone can exceed the threshold.
 */
export const FLAT_RSS_MB_PER_ROUND = 2;

export const FLATNESS_MEANING =
  `flat: live tensors and tf.memory().numBytes equal after round 1 and after the last round, and the least-squares slope of RSS over rounds 2 to the last below ${FLAT_RSS_MB_PER_ROUND} MB per round ` +
  "(round 1 is left out of the RSS rule: the first round sizes the wasm heap and the allocators, which never shrink)";

export interface FlatnessSummary {
  live_tensors_first: number;
  live_tensors_last: number;
  tf_memory_bytes_first: number;
  tf_memory_bytes_last: number;
  rss_mb_round_2: number;
  rss_mb_last: number;
  /** RSS after the last round minus after round 2, and that over the rounds between them. */
  rss_growth_mb: number;
  rss_growth_mb_per_round: number;
  /** Least-squares slope of RSS over rounds 2 … N: the growth per round the flat rule judges. */
  rss_slope_mb_per_round: number;
  flat: boolean;
  meaning: string;
}

/** Judges a series of at least 3 rounds (RSS growth needs two rounds after the first). */
export function flatnessSummary(series: readonly RoundSample[]): FlatnessSummary {
  if (series.length < 3) throw new Error(`flatness needs at least 3 rounds, got ${series.length}`);
  const first = series[0]!;
  const second = series[1]!;
  const last = series[series.length - 1]!;
  const growth = last.rss_mb - second.rss_mb;
  const slope = leastSquaresSlope(series.slice(1).map((s) => [s.round, s.rss_mb]));
  return {
    live_tensors_first: first.live_tensors,
    live_tensors_last: last.live_tensors,
    tf_memory_bytes_first: first.tf_memory_bytes,
    tf_memory_bytes_last: last.tf_memory_bytes,
    rss_mb_round_2: second.rss_mb,
    rss_mb_last: last.rss_mb,
    rss_growth_mb: growth,
    rss_growth_mb_per_round: growth / (series.length - 2),
    rss_slope_mb_per_round: slope,
    flat: first.live_tensors === last.live_tensors && first.tf_memory_bytes === last.tf_memory_bytes && slope < FLAT_RSS_MB_PER_ROUND,
    meaning: FLATNESS_MEANING,
  };
}

function leastSquaresSlope(points: readonly [number, number][]): number {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxy / sxx;
}

/** `flatness` of a backend result (`--rounds N`): the state after each of N demo rounds. */
export interface FlatnessResult {
  rounds: number;
  /** Whether RSS was read after a full GC (node --expose-gc, as the child workers run); not in-process. */
  rss_after_gc: boolean;
  workload: DemoWorkload;
  updates: number;
  series: RoundSample[];
  summary: FlatnessSummary;
}

export async function runFlatness(backend: BackendName, rounds: number, onRound: (s: Probe) => void): Promise<FlatnessResult> {
  const workload = smallDemoWorkload();
  const run = await runDemoRounds({ backend, rounds, workload, onRound });
  return { rounds, rss_after_gc: globalThis.gc !== undefined, workload, updates: run.updates, series: run.rounds, summary: flatnessSummary(run.rounds) };
}

/** One line for stderr, e.g. "20 demo rounds: live tensors 520 → 520, …: flat". */
export function flatnessLine(f: FlatnessResult): string {
  const s = f.summary;
  return (
    `${f.rounds} demo rounds: live tensors ${s.live_tensors_first} → ${s.live_tensors_last}, ` +
    `tf memory ${(s.tf_memory_bytes_first / MB).toFixed(2)} → ${(s.tf_memory_bytes_last / MB).toFixed(2)} MB, ` +
    `RSS ${s.rss_growth_mb >= 0 ? "+" : ""}${s.rss_growth_mb.toFixed(1)} MB from round 2 to ${f.rounds} (slope ${s.rss_slope_mb_per_round.toFixed(2)} MB/round${f.rss_after_gc ? "" : ", no gc() before each sample"}): ` +
    `${s.flat ? "flat" : "NOT flat"}`
  );
}

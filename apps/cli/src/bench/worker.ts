/**
 * One backend's measurements. `pbrl bench` runs this in a child process per backend (the hidden
 * `pbrl bench --worker SPEC` mode), so peak RSS belongs to that backend alone.
 */
import { AdamW, liveTensorCount, RngStream, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import { buildScoringBatch, CausalLM, completionLogProbs, generate, parseModelConfig } from "@pbrl/models";
import type { CliIO } from "../io.js";
import { measureParallel, type ParallelResult } from "./parallel-agents.js";
import { demoRoundWorkload, flatnessLine, runDemoRound, runFlatness, type DemoRoundResult, type FlatnessResult } from "./demo-rounds.js";
import { genMetric, presetConfigJson, workloadsFor, type GenMetric, type Preset, type RateMetric, type Workloads } from "./workloads.js";

export interface WorkerSpec {
  backend: BackendName;
  preset: Preset;
  steps: number;
  /** Time one round of the embedded demo after the model workloads (off with --no-demo-round). */
  demo_round: boolean;
  /** --rounds N: run N small demo rounds and report the state after each; null when not asked. */
  rounds: number | null;
}

export type BackendResult = {
  backend: BackendName;
  /** The backend's one-line description (kernels, threads, tfjs version). */
  description: string;
  /** "child process" normally; "in-process" when the CLI runs from its TypeScript sources (tests). */
  isolation: "child process" | "in-process";
  pid: number;
  parameters: number;
  workloads: Workloads;
  train_step_s_mean: number;
  train_step_s_min: number;
  train_loss_first: number;
  train_loss_last: number;
  /**
   * Peak resident set of the process that ran this backend (process.resourceUsage().maxRSS),
   * read before the demo rounds so it stays comparable with PyTorch's, which runs no demo.
   */
  peak_rss_mb: number;
  /** The same peak, read right after the training steps (before generation). */
  peak_rss_mb_after_train: number;
  /** tf.memory().numBytes with the model and AdamW moments alive, after training. */
  tf_memory_mb_with_optimizer: number;
  /** tf.memory().numBytes after every workload (model weights alive, optimizer disposed). */
  tf_memory_mb_after: number;
  /** Live tensors with the model built, before any workload, and after all of them. */
  live_tensors_before: number;
  live_tensors_after: number;
  /** Two agents' generation and MADPO updates in this thread and in one worker thread per agent (parallel_training="mp"), or why it did not run. */
  parallel_training: ParallelResult | { skipped: string };
  /** One round of the embedded demo (collection + MADPO training), or why it did not run. */
  demo_round: DemoRoundResult | { skipped: string };
  /** With --rounds N only: the state after each of N demo rounds, and whether it stayed flat. */
  flatness?: FlatnessResult;
  /** Wall and CPU seconds of the whole worker, demo rounds included. */
  wall_s: number;
  /** CPU time (user + system) of this process: well below wall_s × threads means other work competed for the CPU. */
  cpu_s: number;
} & Record<RateMetric, number>;

/** What the model workloads measure (everything but the demo rounds and the worker's totals). */
type ModelResult = Omit<BackendResult, "backend" | "description" | "isolation" | "pid" | "parallel_training" | "demo_round" | "flatness" | "wall_s" | "cpu_s">;

const MB = 1024 * 1024;

function randomIds(rng: RngStream, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(vocab));
}

export async function runBenchWorker(spec: WorkerSpec, io: CliIO, isolation: BackendResult["isolation"]): Promise<BackendResult> {
  const start = performance.now();
  const info = await useBackend(spec.backend);
  const say = (msg: string) => io.err(`pbrl bench [${spec.backend}]: ${msg}\n`);
  say(info.description);
  const model = modelWorkloads(spec, say);
  const parallel = await timeParallel(spec, say);
  const demoRound = spec.demo_round ? await timeDemoRound(spec, say) : { skipped: "--no-demo-round" };
  const flatness = spec.rounds !== null ? await measureFlatness(spec.backend, spec.rounds, say) : undefined;
  return {
    backend: spec.backend,
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
}

async function timeParallel(spec: WorkerSpec, say: (msg: string) => void): Promise<BackendResult["parallel_training"]> {
  // The pure-JS kernels would take over ten minutes for this work on the default model.
  if (spec.backend === "cpu" && spec.preset === "default") return { skipped: "cpu backend with the default preset (pure-JS kernels: over ten minutes); --preset tiny measures it" };
  const r = await measureParallel(spec.preset, spec.backend, spec.steps);
  const w = r.workload;
  const t = `${r.threads_per_worker} thread${r.threads_per_worker === 1 ? "" : "s"} each`;
  say(`parallel_training: sampling ${w.gen_prompts}×${w.gen_candidates} candidates per agent: ${r.generation.sequential_s.toFixed(2)} s in this thread, ${r.generation.mp_s.toFixed(2)} s in worker threads (${t}): ${r.generation.speedup.toFixed(2)}×`);
  say(`parallel_training: MADPO update of ${w.agents} agents (${w.pairs_per_update} pairs): ${r.update.sequential_s.toFixed(2)} s in this thread, ${r.update.mp_s.toFixed(2)} s in worker threads: ${r.update.speedup.toFixed(2)}×`);
  return r;
}

async function timeDemoRound(spec: WorkerSpec, say: (msg: string) => void): Promise<DemoRoundResult> {
  const w = demoRoundWorkload(spec.preset, spec.backend);
  say(`demo round: ${w.train_texts} texts × ${w.preference_num_candidates} candidates, ${w.num_train_epochs} epoch${w.num_train_epochs === 1 ? "" : "s"}…`);
  const r = await runDemoRound(spec.backend, w);
  say(`demo round: ${r.demo_round_s.toFixed(1)} s (${r.demo_run_s.toFixed(1)} s with loading and saving the agents), ${r.pairs} pairs, ${r.updates} updates`);
  return r;
}

async function measureFlatness(backend: BackendName, rounds: number, say: (msg: string) => void): Promise<FlatnessResult> {
  const f = await runFlatness(backend, rounds, (p) =>
    say(`flatness round ${p.round}/${rounds}: ${p.round_s.toFixed(1)} s, ${p.live_tensors} live tensors, tf memory ${(p.tf_memory_bytes / MB).toFixed(2)} MB, RSS ${p.rss_mb.toFixed(1)} MB`),
  );
  say(flatnessLine(f));
  return f;
}

/** Training steps and generation on a randomly initialised model of the preset. */
function modelWorkloads(spec: WorkerSpec, say: (msg: string) => void): ModelResult {
  const config = parseModelConfig(presetConfigJson(spec.preset), `bench preset ${spec.preset}`);
  const w = workloadsFor(spec.backend, spec.steps);
  const model = CausalLM.randomInit(config, RngStream.fromSeed(0, "bench"));
  try {
    const liveBefore = liveTensorCount();
    const data = RngStream.fromSeed(0, "bench-data");
    const vocab = config.vocabSize;

    // Training: mean next-token NLL over every position of batch × seq_len random tokens.
    const opt = new AdamW(model.params, { lr: w.lr, weightDecay: w.weight_decay });
    const trainStep = (): { seconds: number; loss: number } => {
      const rows = Array.from({ length: w.train_batch }, () => randomIds(data, w.train_seq_len, vocab));
      const batch = buildScoringBatch(
        rows.map((r) => ({ promptIds: r.slice(0, 1), completionIds: r.slice(1) })),
        0,
      );
      const t0 = performance.now();
      const { value, grads } = tf.variableGrads(() => {
        const { tokens, sums } = completionLogProbs(model, batch);
        sums.dispose();
        return tf.neg(tf.mean(tokens)) as tf.Scalar;
      }, model.trainableVariables());
      opt.step(model.gradsByWeightName(grads));
      const loss = value.dataSync()[0]!;
      const seconds = (performance.now() - t0) / 1000;
      value.dispose();
      tf.dispose(Object.values(grads));
      return { seconds, loss };
    };
    const tokensPerStep = w.train_batch * w.train_seq_len;
    for (let i = 0; i < w.train_warmup_steps; i++) {
      const s = trainStep();
      say(`train warm-up step: ${s.seconds.toFixed(2)} s, loss ${s.loss.toFixed(4)}`);
    }
    const steps: { seconds: number; loss: number }[] = [];
    for (let i = 0; i < w.train_steps; i++) {
      const s = trainStep();
      steps.push(s);
      say(`train step ${i + 1}/${w.train_steps} (${w.train_batch}×${w.train_seq_len}): ${s.seconds.toFixed(2)} s, ${(tokensPerStep / s.seconds).toFixed(0)} tokens/s, loss ${s.loss.toFixed(4)}`);
    }
    const trainSeconds = steps.reduce((a, s) => a + s.seconds, 0);
    const tfMemoryWithOptimizer = tf.memory().numBytes;
    const peakRssAfterTrain = process.resourceUsage().maxRSS / 1024;
    opt.dispose();

    // Generation: random prompts, sampling at temperature 1, no EOS, with and without KV cache.
    const gen: Partial<Record<GenMetric, number>> = {};
    const warmPrompt = [randomIds(data, w.gen_prompt_len, vocab)];
    for (const useCache of [true, false]) generate(model, warmPrompt, { maxNewTokens: 4, temperature: w.gen_temperature, rng: RngStream.fromSeed(0, "bench-warmup"), useCache });
    for (const b of w.gen_batch_sizes) {
      for (const useCache of [true, false]) {
        const prompts = Array.from({ length: b }, () => randomIds(data, w.gen_prompt_len, vocab));
        const t0 = performance.now();
        const out = generate(model, prompts, { maxNewTokens: w.gen_new_tokens, temperature: w.gen_temperature, rng: RngStream.fromSeed(0, `bench-gen-b${b}`), useCache });
        const seconds = (performance.now() - t0) / 1000;
        const produced = out.reduce((a, o) => a + o.tokens.length, 0);
        if (produced !== b * w.gen_new_tokens) throw new Error(`generation produced ${produced} tokens, expected ${b}×${w.gen_new_tokens}`);
        gen[genMetric(b, useCache)] = produced / seconds;
        say(`generate batch ${b}, ${useCache ? "KV cache" : "no cache"}: ${w.gen_new_tokens} new tokens per row in ${seconds.toFixed(2)} s, ${(produced / seconds).toFixed(1)} tokens/s`);
      }
    }

    const liveAfter = liveTensorCount();
    return {
      parameters: model.numParameters(),
      workloads: w,
      train_tokens_per_s: (tokensPerStep * steps.length) / trainSeconds,
      train_step_s_mean: trainSeconds / steps.length,
      train_step_s_min: Math.min(...steps.map((s) => s.seconds)),
      train_loss_first: steps[0]!.loss,
      train_loss_last: steps[steps.length - 1]!.loss,
      ...(gen as Record<GenMetric, number>),
      peak_rss_mb: process.resourceUsage().maxRSS / 1024,
      peak_rss_mb_after_train: peakRssAfterTrain,
      tf_memory_mb_with_optimizer: tfMemoryWithOptimizer / MB,
      tf_memory_mb_after: tf.memory().numBytes / MB,
      live_tensors_before: liveBefore,
      live_tensors_after: liveAfter,
    };
  } finally {
    model.dispose();
  }
}

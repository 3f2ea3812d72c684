/**
 * One backend's measurements. `pbrl bench` runs this in a child process per backend (the hidden
 * `pbrl bench --worker SPEC` mode), so peak RSS belongs to that backend alone.
 */
import { AdamW, liveTensorCount, RngStream, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import { buildScoringBatch, CausalLM, completionLogProbs, generate, parseModelConfig } from "@pbrl/models";
import type { CliIO } from "../io.js";
import { genMetric, presetConfigJson, workloadsFor, type GenMetric, type Preset, type RateMetric, type Workloads } from "./workloads.js";

export interface WorkerSpec {
  backend: BackendName;
  preset: Preset;
  steps: number;
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
  /** Peak resident set of the process that ran this backend (process.resourceUsage().maxRSS). */
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
  wall_s: number;
  /** CPU time (user + system) of this process: well below wall_s × threads means other work competed for the CPU. */
  cpu_s: number;
} & Record<RateMetric, number>;

const MB = 1024 * 1024;

function randomIds(rng: RngStream, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(vocab));
}

export async function runBenchWorker(spec: WorkerSpec, io: CliIO, isolation: BackendResult["isolation"]): Promise<BackendResult> {
  const start = performance.now();
  const info = await useBackend(spec.backend);
  const say = (msg: string) => io.err(`pbrl bench [${spec.backend}]: ${msg}\n`);
  say(info.description);
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
      backend: spec.backend,
      description: info.description,
      isolation,
      pid: process.pid,
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
      wall_s: (performance.now() - start) / 1000,
      cpu_s: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
    };
  } finally {
    model.dispose();
  }
}

/**
 * The model workloads of one pbrl column: build or load the model, time training steps and
 * generation. The worker (worker.ts) adds the demo rounds and the process totals around it.
 */
import { AdamW, guardHeap, liveTensorCount, RngStream, tf, type ComputePrecision } from "@pbrl/core-tensor";
import { buildScoringBatch, CausalLM, checkTrainingStep, completionLogProbs, generate, loadPretrained, modelSizes, type CausalLMConfig } from "@pbrl/models";
import { fastRandomModel } from "./fast-init.js";
import { measureMachinePeak } from "./machine-peak.js";
import { rooflineSeconds, type RooflineModel, type RooflineWorkload } from "./roofline.js";
import { REAL_SIZE_PRESETS, type ModelSource } from "./presets.js";
import { BF16_WEIGHTS_METRICS, genMetric, type Bf16WeightsMetric, type GenMetric, type RateMetric, type VariantMetric, type Workloads } from "./workloads.js";

/** What the model workloads measure; uncached generation metrics only when the workloads time it. */
export type ModelResult = {
  parameters: number;
  workloads: Workloads;
  /** Seconds to build the model: random init and upload for a preset, loadPretrained for --model. */
  load_s: number;
  train_step_s_mean: number;
  train_step_s_min: number;
  train_loss_first: number;
  train_loss_last: number;
  /**
   * Peak resident set of the process that ran this backend (process.resourceUsage().maxRSS),
   * read before the demo rounds so it stays comparable with PyTorch's, which runs no demo.
   */
  peak_rss_mb: number;
  /** The same peak, read right after building the model (what the weights and their loading cost) and after the training steps. */
  peak_rss_mb_after_load: number;
  peak_rss_mb_after_train: number;
  /** tf.memory().numBytes with the model and AdamW moments alive, after training. */
  tf_memory_mb_with_optimizer: number;
  /** tf.memory().numBytes after every workload (model weights alive, optimizer disposed). */
  tf_memory_mb_after: number;
  /** Live tensors with the model built, before any workload, and after all of them. */
  live_tensors_before: number;
  live_tensors_after: number;
} & Pick<Record<RateMetric, number>, "train_tokens_per_s" | "gen_b1_cached_tokens_per_s" | "gen_b8_cached_tokens_per_s"> &
  Partial<Record<GenMetric | Bf16WeightsMetric | VariantMetric, number>> & {
    /**
     * Largest tf.memory() above the weights and AdamW moments during a training step (one
     * untimed step each): activations and gradients; ckpt_ with gradient_checkpointing, lora_
     * for the LoRA step (whose weight gradients are the adapter's).
     */
    train_activation_peak_mb?: number;
    ckpt_train_activation_peak_mb?: number;
    lora_train_activation_peak_mb?: number;
    /**
     * The weight gradients a step holds at its end, within the activation peak above (the trainable
     * weights' size; the same with gradient checkpointing): the peak less these is what the
     * step's activations and the optimizer's temporaries take.
     */
    train_gradients_mb?: number;
    lora_train_gradients_mb?: number;
    /** LoRA's trainable weights (the adapter) and step time. */
    lora_parameters?: number;
    lora_train_step_s_mean?: number;
    ckpt_train_step_s_mean?: number;
    /** Cached generation against this machine's roofline, measured in the same run (absent on the pure-JS cpu backend). */
    generation_roofline?: GenerationRoofline;
  };

/** The GEMM peak and read bandwidth of this run, and each cached generation workload's share of its roofline (roofline.ts). */
export interface GenerationRoofline {
  gemm_gflops: number;
  read_gb_per_s: number;
  /** b1_cached, b8_cached: that many prompts, one row each; shared_1x16: one prompt, 16 candidates (num_return_sequences). */
  workloads: Record<
    string,
    { prompts: number; rows: number; prompt_len: number; new_tokens: number; seconds: number; roofline_s: number; roofline_fraction: number }
  >;
}

/** The candidates per prompt of the shared-prompt workload: preference_num_candidates at its issue's size. */
const SHARED_CANDIDATES = 16;

function rooflineModel(config: CausalLMConfig, precision: ComputePrecision): RooflineModel {
  return {
    matmulParameters: modelSizes(config).layerProjections * config.numLayers + config.vocabSize * config.hiddenSize,
    layers: config.numLayers,
    attentionWidth: config.numHeads * config.headDim,
    // In bf16 the libtorch decoder reads bfloat16 copies of the projections.
    bytesPerWeight: precision === "bf16" ? 2 : 4,
  };
}

const MB = 1024 * 1024;

/** What to do when a backend cannot hold the bench's training step. */
const BENCH_TRAINING_ADVICE = "give the bench a smaller --train_batch or --train_seq, or a smaller model";

function randomIds(rng: RngStream, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => rng.int(vocab));
}

async function buildModel(source: ModelSource, config: CausalLMConfig): Promise<CausalLM> {
  if ("dir" in source) return (await loadPretrained(source.dir)).model;
  // The small presets keep transformers-style normal init (their losses stay comparable with
  // earlier runs); at real sizes it would take tens of seconds (see fast-init.ts).
  return REAL_SIZE_PRESETS.includes(source.preset) ? fastRandomModel(config, 0) : CausalLM.randomInit(config, RngStream.fromSeed(0, "bench"));
}

/**
 * Training steps and generation on the model. Throws MemoryBudgetError, before building the
 * model, when the active backend cannot hold a training step of it (wasm and native: 4 GB).
 */
export async function modelWorkloads(
  source: ModelSource,
  config: CausalLMConfig,
  w: Workloads,
  precision: ComputePrecision,
  say: (msg: string) => void,
): Promise<ModelResult> {
  checkTrainingStep(config, { sequences: w.train_batch, seqLen: w.train_seq_len }, { advice: BENCH_TRAINING_ADVICE });
  const t0 = performance.now();
  const model = await guardHeap("loading the model", () => buildModel(source, config));
  const loadS = (performance.now() - t0) / 1000;
  const peakRssAfterLoad = process.resourceUsage().maxRSS / 1024;
  say(
    `model ${"dir" in source ? `loaded from ${source.dir}` : "randomly initialised"} in ${loadS.toFixed(2)} s: ${model.numParameters().toLocaleString("en-US")} parameters`,
  );
  try {
    const liveBefore = liveTensorCount();
    const data = RngStream.fromSeed(0, "bench-data");
    const vocab = config.vocabSize;

    // Training: mean next-token NLL over every position of batch × seq_len random tokens; the
    // full model first, then (--gradient_checkpointing) recomputing, then (--lora) an adapter.
    const full = timeTraining(model, w, data, say, "train");
    const tfMemoryWithOptimizer = full.tfMemoryWithOptimizer;
    const peakRssAfterTrain = process.resourceUsage().maxRSS / 1024;
    const gradientsMb = (m: CausalLM) => m.trainableVariables().reduce((n, v) => n + 4 * v.size, 0) / MB;
    const variants: Partial<ModelResult> = { train_activation_peak_mb: full.activationPeakMb, train_gradients_mb: gradientsMb(model) };
    if (w.gradient_checkpointing === true) {
      model.gradientCheckpointing = true;
      const ckpt = timeTraining(model, w, data, say, "train (gradient checkpointing)");
      model.gradientCheckpointing = false;
      Object.assign(variants, {
        ckpt_train_tokens_per_s: ckpt.tokensPerS,
        ckpt_train_step_s_mean: ckpt.stepMean,
        ckpt_train_activation_peak_mb: ckpt.activationPeakMb,
      });
    }
    if (w.lora !== undefined) {
      const l = w.lora;
      const lora = model.withLora(
        { r: l.r, alpha: l.alpha, dropout: l.dropout, targetModules: l.target_modules, useRslora: false },
        RngStream.fromSeed(0, "bench-lora"),
      );
      lora.dropoutStream = RngStream.fromSeed(0, "bench-lora-dropout");
      try {
        const t = timeTraining(lora, w, data, say, "train (LoRA)");
        Object.assign(variants, {
          lora_train_tokens_per_s: t.tokensPerS,
          lora_train_step_s_mean: t.stepMean,
          lora_train_activation_peak_mb: t.activationPeakMb,
          lora_train_gradients_mb: gradientsMb(lora),
          lora_parameters: lora.numTrainableParameters(),
        });
      } finally {
        lora.dispose();
        for (const v of model.params.values()) v.trainable = true; // the base again, for what follows
      }
    }

    // Generation: random prompts, sampling at temperature 1, no EOS; uncached only when asked.
    const gen: Partial<Record<GenMetric, number>> = {};
    const modes = w.gen_uncached ? [true, false] : [true];
    const warmPrompt = [randomIds(data, w.gen_prompt_len, vocab)];
    for (const useCache of modes)
      generate(model, warmPrompt, { maxNewTokens: 4, temperature: w.gen_temperature, rng: RngStream.fromSeed(0, "bench-warmup"), useCache });
    const timed: { name: string; workload: RooflineWorkload; seconds: number }[] = [];
    for (const b of w.gen_batch_sizes) {
      for (const useCache of modes) {
        const prompts = Array.from({ length: b }, () => randomIds(data, w.gen_prompt_len, vocab));
        const t = performance.now();
        const out = generate(model, prompts, {
          maxNewTokens: w.gen_new_tokens,
          temperature: w.gen_temperature,
          rng: RngStream.fromSeed(0, `bench-gen-b${b}`),
          useCache,
        });
        const seconds = (performance.now() - t) / 1000;
        const produced = out.reduce((a, o) => a + o.tokens.length, 0);
        if (produced !== b * w.gen_new_tokens) throw new Error(`generation produced ${produced} tokens, expected ${b}×${w.gen_new_tokens}`);
        gen[genMetric(b, useCache)] = produced / seconds;
        if (useCache)
          timed.push({ name: `b${b}_cached`, workload: { prompts: b, promptLen: w.gen_prompt_len, rows: b, newTokens: w.gen_new_tokens }, seconds });
        say(
          `generate batch ${b}, ${useCache ? "KV cache" : "no cache"}: ${w.gen_new_tokens} new tokens per row in ${seconds.toFixed(2)} s, ${(produced / seconds).toFixed(1)} tokens/s`,
        );
      }
    }

    // Read before the roofline's own buffers (256 MiB for the bandwidth) count: what the workloads above held.
    const peakRss = process.resourceUsage().maxRSS / 1024;
    const roofline = tf.getBackend() === "cpu" ? undefined : generationRoofline(model, data, w, precision, timed, say);

    const liveAfter = liveTensorCount();
    return {
      parameters: model.numParameters(),
      workloads: w,
      load_s: loadS,
      train_tokens_per_s: full.tokensPerS,
      train_step_s_mean: full.stepMean,
      train_step_s_min: full.stepMin,
      train_loss_first: full.lossFirst,
      train_loss_last: full.lossLast,
      ...variants,
      ...(gen as Record<"gen_b1_cached_tokens_per_s" | "gen_b8_cached_tokens_per_s", number>),
      peak_rss_mb: peakRss,
      peak_rss_mb_after_load: peakRssAfterLoad,
      peak_rss_mb_after_train: peakRssAfterTrain,
      tf_memory_mb_with_optimizer: tfMemoryWithOptimizer / MB,
      tf_memory_mb_after: tf.memory().numBytes / MB,
      live_tensors_before: liveBefore,
      live_tensors_after: liveAfter,
      ...(roofline !== undefined ? { generation_roofline: roofline } : {}),
      // In bf16 the libtorch decoder reads bfloat16 copies of the projection weights, so its cached
      // generation is generation with bf16 weights: the same measurement under both names.
      ...(precision === "bf16" ? Object.fromEntries(BF16_WEIGHTS_METRICS.map((m) => [m, gen[m.replace("_bf16_weights", "") as GenMetric]])) : {}),
    };
  } finally {
    model.dispose();
  }
}

/**
 * This machine's GEMM peak and read bandwidth, measured now, beside the generations they judge
 * (the cpu backend's pure-JS kernels would take minutes, so it has none), and a preference round's
 * shape timed with them: one prompt, {@link SHARED_CANDIDATES} candidates.
 */
function generationRoofline(
  model: CausalLM,
  data: RngStream,
  w: Workloads,
  precision: ComputePrecision,
  timed: { name: string; workload: RooflineWorkload; seconds: number }[],
  say: (msg: string) => void,
): GenerationRoofline {
  const peak = measureMachinePeak();
  const prompt = [randomIds(data, w.gen_prompt_len, model.config.vocabSize)];
  const t = performance.now();
  generate(model, prompt, {
    maxNewTokens: w.gen_new_tokens,
    temperature: w.gen_temperature,
    numReturnSequences: SHARED_CANDIDATES,
    rng: RngStream.fromSeed(0, "bench-gen-shared"),
  });
  const shared = { prompts: 1, promptLen: w.gen_prompt_len, rows: SHARED_CANDIDATES, newTokens: w.gen_new_tokens };
  const all = [...timed, { name: `shared_1x${SHARED_CANDIDATES}`, workload: shared, seconds: (performance.now() - t) / 1000 }];
  const rm = rooflineModel(model.config, precision);
  const workloads: GenerationRoofline["workloads"] = {};
  for (const { name, workload: r, seconds } of all) {
    const best = rooflineSeconds(rm, r, peak);
    workloads[name] = {
      prompts: r.prompts,
      rows: r.rows,
      prompt_len: r.promptLen,
      new_tokens: r.newTokens,
      seconds,
      roofline_s: best,
      roofline_fraction: best / seconds,
    };
    say(
      `generate ${name}: ${(best / seconds).toFixed(3)} of the roofline (${best.toFixed(3)} s at ${(peak.flopsPerS / 1e9).toFixed(1)} GFLOPS, ${(peak.readBytesPerS / 1e9).toFixed(1)} GB/s)`,
    );
  }
  return { gemm_gflops: peak.flopsPerS / 1e9, read_gb_per_s: peak.readBytesPerS / 1e9, workloads };
}

/**
 * Warm-up and timed AdamW steps of `model` (its trainable weights) on random tokens, then one
 * untimed step that records the largest tensor memory above what was live before it (weights and
 * moments): the activations and gradients of a step.
 */
function timeTraining(model: CausalLM, w: Workloads, data: RngStream, say: (msg: string) => void, label: string) {
  const opt = new AdamW(model.params, { lr: w.lr, weightDecay: w.weight_decay });
  const step = (): { seconds: number; loss: number } => {
    const rows = Array.from({ length: w.train_batch }, () => randomIds(data, w.train_seq_len, model.config.vocabSize));
    const batch = buildScoringBatch(
      rows.map((r) => ({ promptIds: r.slice(0, 1), completionIds: r.slice(1) })),
      0,
    );
    const t = performance.now();
    const { value, grads } = guardHeap("a bench training step", () =>
      model.training(() =>
        tf.variableGrads(() => {
          const { tokens, sums } = completionLogProbs(model, batch);
          sums.dispose();
          return tf.neg(tf.mean(tokens)) as tf.Scalar;
        }, model.trainableVariables()),
      ),
    );
    opt.step(model.gradsByWeightName(grads));
    const loss = value.dataSync()[0]!;
    const seconds = (performance.now() - t) / 1000;
    value.dispose();
    tf.dispose(Object.values(grads));
    return { seconds, loss };
  };
  const tokensPerStep = w.train_batch * w.train_seq_len;
  try {
    for (let i = 0; i < w.train_warmup_steps; i++) {
      const s = step();
      say(`${label} warm-up step: ${s.seconds.toFixed(2)} s, loss ${s.loss.toFixed(4)}`);
    }
    const steps: { seconds: number; loss: number }[] = [];
    for (let i = 0; i < w.train_steps; i++) {
      const s = step();
      steps.push(s);
      say(
        `${label} step ${i + 1}/${w.train_steps} (${w.train_batch}×${w.train_seq_len}): ${s.seconds.toFixed(2)} s, ${(tokensPerStep / s.seconds).toFixed(0)} tokens/s, loss ${s.loss.toFixed(4)}`,
      );
    }
    const tfMemoryWithOptimizer = tf.memory().numBytes;
    const activationPeakMb = peakAbove(tfMemoryWithOptimizer, step) / MB;
    const seconds = steps.reduce((a, s) => a + s.seconds, 0);
    return {
      tokensPerS: (tokensPerStep * steps.length) / seconds,
      stepMean: seconds / steps.length,
      stepMin: Math.min(...steps.map((s) => s.seconds)),
      lossFirst: steps[0]!.loss,
      lossLast: steps[steps.length - 1]!.loss,
      tfMemoryWithOptimizer,
      activationPeakMb,
    };
  } finally {
    opt.dispose();
  }
}

/** The largest tf.memory().numBytes above `base` while `fn` runs, read after every kernel. */
function peakAbove(base: number, fn: () => unknown): number {
  const engine = tf.engine() as unknown as { runKernel: (...args: unknown[]) => unknown };
  const run = engine.runKernel.bind(engine);
  let peak = base;
  engine.runKernel = (...args: unknown[]) => {
    const out = run(...args);
    peak = Math.max(peak, tf.memory().numBytes);
    return out;
  };
  try {
    fn();
  } finally {
    engine.runKernel = run;
  }
  return peak - base;
}

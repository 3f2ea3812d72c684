/**
 * What `pbrl bench` measures: the workload sizes per backend and model size, and the metric
 * names shared by the TypeScript workers and apps/cli/assets/bench/torch_bench.py.
 */
import type { BackendName } from "@pbrl/core-tensor";

/**
 * "small": the default and tiny presets and checkpoints under {@link REAL_SIZE_PARAMETERS};
 * "real": the real-size presets and larger checkpoints, whose steps take seconds each.
 */
export type Scale = "small" | "real";

/** A --model checkpoint with at least this many parameters gets the real-size workloads. */
export const REAL_SIZE_PARAMETERS = 50_000_000;

/** Timed training steps when --steps is not given (after the warm-up steps). */
export const DEFAULT_STEPS = 3;

/** Sizes of one run's workloads, snake_case because they are printed as JSON next to the metrics. */
export interface Workloads {
  train_batch: number;
  train_seq_len: number;
  /** Timed steps, after `train_warmup_steps` untimed ones. */
  train_steps: number;
  train_warmup_steps: number;
  gen_prompt_len: number;
  gen_new_tokens: number;
  gen_batch_sizes: number[];
  /**
   * Whether generation is also timed without the KV cache. Off at real sizes unless --uncached:
   * every new token then re-reads the whole prefix, minutes per run at 135M parameters.
   */
  gen_uncached: boolean;
  /** Sampling temperature; no top-k/top-p, no EOS, so every row produces gen_new_tokens tokens. */
  gen_temperature: number;
  /** AdamW hyper-parameters of the training step. */
  lr: number;
  weight_decay: number;
  /**
   * --lora: after the full training steps, the same steps training a LoRA adapter (PEFT's
   * LoraConfig on the PyTorch side) on every linear layer: lora_train_tokens_per_s.
   */
  lora?: BenchLora;
  /** --gradient_checkpointing: the full training steps once more with each layer recomputed in the backward pass. */
  gradient_checkpointing?: boolean;
}

/** The LoRA workload's settings: TRL's defaults (r 16, alpha 32, dropout 0.05) on every linear layer. */
export interface BenchLora {
  r: number;
  alpha: number;
  dropout: number;
  target_modules: "all-linear";
}

export const BENCH_LORA: BenchLora = { r: 16, alpha: 32, dropout: 0.05, target_modules: "all-linear" };

/** What the command line can change about the workloads. */
export interface WorkloadFlags {
  steps?: number | undefined;
  trainBatch?: number | undefined;
  trainSeq?: number | undefined;
  uncached?: boolean | undefined;
  lora?: boolean | undefined;
  gradientCheckpointing?: boolean | undefined;
}

/**
 * The training batch of a real-size model: 4 × 128 below 300M parameters (SmolLM2-135M), 2 × 128
 * above (Qwen2.5-0.5B: its AdamW state alone is 4 GB, and PyTorch takes seconds per step).
 */
export function realTrainBatch(parameters: number): number {
  return parameters < 300_000_000 ? 4 : 2;
}

/**
 * The same model and workloads for every side. Small scale: training on batch 8 × 128, two
 * warm-up steps (on native the second step still ran ~1.7× slower than the steady state while
 * the wasm heap grew to its high-water mark); the `cpu` backend runs pure-JS kernels, about 30×
 * slower than wasm, so it times a single training step whatever `--steps` says and generates 16
 * new tokens instead of 64 (uncached generation at batch 8 alone would take six minutes). Real
 * scale: {@link realTrainBatch} × 128, one warm-up step (libtorch and PyTorch have no heap to
 * grow), KV-cache generation only unless --uncached.
 */
export function workloadsFor(backend: BackendName | "pytorch", scale: Scale, parameters: number, flags: WorkloadFlags = {}): Workloads {
  const real = scale === "real";
  const base: Workloads = {
    train_batch: real ? realTrainBatch(parameters) : 8,
    train_seq_len: 128,
    train_steps: flags.steps ?? DEFAULT_STEPS,
    train_warmup_steps: real ? 1 : 2,
    gen_prompt_len: 16,
    gen_new_tokens: 64,
    gen_batch_sizes: [1, 8],
    gen_uncached: !real || flags.uncached === true,
    gen_temperature: 1,
    lr: 1e-4,
    weight_decay: 0.01,
  };
  const sized = backend === "cpu" && !real ? { ...base, train_steps: 1, gen_new_tokens: 16 } : base;
  return {
    ...sized,
    ...(flags.trainBatch !== undefined ? { train_batch: flags.trainBatch } : {}),
    ...(flags.trainSeq !== undefined ? { train_seq_len: flags.trainSeq } : {}),
    ...(flags.lora === true ? { lora: BENCH_LORA } : {}),
    ...(flags.gradientCheckpointing === true ? { gradient_checkpointing: true } : {}),
  };
}

/** Throughput metrics every side reports (tokens per second of wall time); uncached ones only when timed. */
export const RATE_METRICS = [
  "train_tokens_per_s",
  "gen_b1_cached_tokens_per_s",
  "gen_b1_uncached_tokens_per_s",
  "gen_b8_cached_tokens_per_s",
  "gen_b8_uncached_tokens_per_s",
] as const;
export type RateMetric = (typeof RATE_METRICS)[number];
export type GenMetric = Exclude<RateMetric, "train_tokens_per_s">;

/**
 * Training rates of the optional workloads (--lora, --gradient_checkpointing), with what they
 * are measured against: LoRA steps and recomputing steps beside the full steps of the same run.
 */
export const VARIANT_METRICS = ["lora_train_tokens_per_s", "ckpt_train_tokens_per_s"] as const;
export type VariantMetric = (typeof VARIANT_METRICS)[number];

/**
 * KV-cache generation with the model's weights held in bfloat16: transformers after
 * `model.to(torch.bfloat16)` in the bf16 PyTorch column; pbrl's libtorch decoder in bf16, which
 * reads bfloat16 copies of the projection weights, in its bf16 column.
 */
export const BF16_WEIGHTS_METRICS = ["gen_b1_cached_bf16_weights_tokens_per_s", "gen_b8_cached_bf16_weights_tokens_per_s"] as const;
export type Bf16WeightsMetric = (typeof BF16_WEIGHTS_METRICS)[number];

/** Generation metric name for a batch size and cache mode. */
export function genMetric(batch: number, cached: boolean): GenMetric {
  const name = `gen_b${batch}_${cached ? "cached" : "uncached"}_tokens_per_s`;
  if (!(RATE_METRICS as readonly string[]).includes(name)) throw new Error(`no metric for generation at batch ${batch}`);
  return name as GenMetric;
}

/** Every number a pbrl backend result of a small-scale run carries, all positive and finite on a healthy run. */
export const PBRL_METRICS = [
  ...RATE_METRICS,
  "load_s",
  "peak_rss_mb",
  "peak_rss_mb_after_load",
  "peak_rss_mb_after_train",
  "tf_memory_mb_after",
  "tf_memory_mb_with_optimizer",
  "live_tensors_before",
  "live_tensors_after",
] as const;

/**
 * What `pbrl bench` measures: the model presets, the workload sizes per backend and the metric
 * names shared by the TypeScript workers and scripts/bench/torch_bench.py.
 */
import type { BackendName } from "@pbrl/core-tensor";
import { llamaConfigJson } from "@pbrl/models";

export type Preset = "default" | "tiny";
export const PRESETS: readonly Preset[] = ["default", "tiny"];

/**
 * `default` is the model of the training-speed performance issue (≈8.8M parameters, untied
 * embeddings); `tiny` is a seconds-long smoke test.
 */
export function presetConfigJson(preset: Preset): Record<string, unknown> {
  return preset === "default"
    ? llamaConfigJson({ vocabSize: 8000, hiddenSize: 256, intermediateSize: 688, numLayers: 6, numHeads: 4, numKvHeads: 4, tieWordEmbeddings: false })
    : llamaConfigJson({ vocabSize: 256, hiddenSize: 32, intermediateSize: 64, numLayers: 2, numHeads: 2, numKvHeads: 2, tieWordEmbeddings: false });
}

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
  /** Sampling temperature; no top-k/top-p, no EOS, so every row produces gen_new_tokens tokens. */
  gen_temperature: number;
  /** AdamW hyper-parameters of the training step. */
  lr: number;
  weight_decay: number;
}

/**
 * The same model and training batch for every side. The `cpu` backend runs pure-JS kernels,
 * about 30× slower than wasm, so it times a single training step whatever `--steps` says and
 * generates 16 new tokens instead of 64 (uncached generation at batch 8 alone would take six
 * minutes), which keeps the bench within minutes; its tokens/s stay comparable as rates.
 */
export function workloadsFor(backend: BackendName | "pytorch", steps: number): Workloads {
  const full: Workloads = {
    train_batch: 8,
    train_seq_len: 128,
    train_steps: steps,
    // Two untimed steps: on native the second step still ran ~1.7× slower than the steady state
    // (the wasm heap grows to its high-water mark over the first two), which skewed a 3-step mean.
    train_warmup_steps: 2,
    gen_prompt_len: 16,
    gen_new_tokens: 64,
    gen_batch_sizes: [1, 8],
    gen_temperature: 1,
    lr: 1e-4,
    weight_decay: 0.01,
  };
  return backend === "cpu" ? { ...full, train_steps: 1, gen_new_tokens: 16 } : full;
}

/** Throughput metrics every side reports (tokens per second of wall time). */
export const RATE_METRICS = [
  "train_tokens_per_s",
  "gen_b1_cached_tokens_per_s",
  "gen_b1_uncached_tokens_per_s",
  "gen_b8_cached_tokens_per_s",
  "gen_b8_uncached_tokens_per_s",
] as const;
export type RateMetric = (typeof RATE_METRICS)[number];
export type GenMetric = Exclude<RateMetric, "train_tokens_per_s">;

/** Generation metric name for a batch size and cache mode. */
export function genMetric(batch: number, cached: boolean): GenMetric {
  const name = `gen_b${batch}_${cached ? "cached" : "uncached"}_tokens_per_s`;
  if (!(RATE_METRICS as readonly string[]).includes(name)) throw new Error(`no metric for generation at batch ${batch}`);
  return name as GenMetric;
}

/** Every number a pbrl backend result carries, all positive and finite on a healthy run. */
export const PBRL_METRICS = [...RATE_METRICS, "peak_rss_mb", "peak_rss_mb_after_train", "tf_memory_mb_after", "tf_memory_mb_with_optimizer", "live_tensors_before", "live_tensors_after"] as const;

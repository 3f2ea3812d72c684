/**
 * The models `pbrl bench` measures: its presets (randomly initialised on both sides) and
 * `--model DIR` (a Hugging Face checkpoint folder, loaded by pbrl and by transformers).
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { llamaConfigJson, parameterSpecs, parseModelConfig, type CausalLMConfig } from "@pbrl/models";

export type Preset = "default" | "tiny" | "smollm2-135m" | "qwen2.5-0.5b";
export const PRESETS: readonly Preset[] = ["default", "tiny", "smollm2-135m", "qwen2.5-0.5b"];

/** Presets of real checkpoints' shapes: they get the real-size workloads (see workloads.ts). */
export const REAL_SIZE_PRESETS: readonly Preset[] = ["smollm2-135m", "qwen2.5-0.5b"];

/** What a bench run measures: a preset, or a checkpoint folder given with --model. */
export type ModelSource = { preset: Preset } | { dir: string };

/**
 * HuggingFaceTB/SmolLM2-135M's config.json, with dtype float32: the bench computes in float32
 * (or bf16 autocast from float32 weights), whatever dtype the published weights are stored in.
 */
function smollm2Config(): Record<string, unknown> {
  // llamaConfigJson's rms_norm_eps is SmolLM2's 1e-5; its config.json names no pad token.
  const { pad_token_id: _pad, ...config } = llamaConfigJson({
    vocabSize: 49152,
    hiddenSize: 576,
    intermediateSize: 1536,
    numLayers: 30,
    numHeads: 9,
    numKvHeads: 3,
    ropeTheta: 100000,
    maxPositionEmbeddings: 8192,
    tieWordEmbeddings: true,
    bosTokenId: 0,
    eosTokenId: 0,
  });
  return { ...config, initializer_range: 0.041666666666666664 };
}

/** Qwen/Qwen2.5-0.5B's config.json (qkv biases come with model_type qwen2), dtype float32. */
function qwen25Config(): Record<string, unknown> {
  return {
    architectures: ["Qwen2ForCausalLM"],
    model_type: "qwen2",
    vocab_size: 151936,
    hidden_size: 896,
    intermediate_size: 4864,
    num_hidden_layers: 24,
    num_attention_heads: 14,
    num_key_value_heads: 2,
    hidden_act: "silu",
    rms_norm_eps: 1e-6,
    rope_parameters: { rope_type: "default", rope_theta: 1000000 },
    max_position_embeddings: 32768,
    max_window_layers: 24,
    sliding_window: 32768,
    use_sliding_window: false,
    tie_word_embeddings: true,
    attention_dropout: 0.0,
    initializer_range: 0.02,
    bos_token_id: 151643,
    eos_token_id: 151643,
    dtype: "float32",
  };
}

/**
 * `default` is the model of the training-speed performance issue (≈8.8M parameters, untied
 * embeddings); `tiny` is a seconds-long smoke test; the others are real checkpoints' shapes.
 */
export function presetConfigJson(preset: Preset): Record<string, unknown> {
  switch (preset) {
    case "default":
      return llamaConfigJson({ vocabSize: 8000, hiddenSize: 256, intermediateSize: 688, numLayers: 6, numHeads: 4, numKvHeads: 4, tieWordEmbeddings: false });
    case "tiny":
      return llamaConfigJson({ vocabSize: 256, hiddenSize: 32, intermediateSize: 64, numLayers: 2, numHeads: 2, numKvHeads: 2, tieWordEmbeddings: false });
    case "smollm2-135m":
      return smollm2Config();
    case "qwen2.5-0.5b":
      return qwen25Config();
  }
}

/** The config.json of a source: the preset's, or the checkpoint folder's (read as is). */
export function sourceConfigJson(source: ModelSource): Record<string, unknown> {
  if ("preset" in source) return presetConfigJson(source.preset);
  const file = path.join(source.dir, "config.json");
  return JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
}

export function sourceConfig(source: ModelSource): CausalLMConfig {
  return "preset" in source
    ? parseModelConfig(presetConfigJson(source.preset), `bench preset ${source.preset}`)
    : parseModelConfig(sourceConfigJson(source), path.join(source.dir, "config.json"));
}

export function parameterCount(config: CausalLMConfig): number {
  return parameterSpecs(config).reduce((a, s) => a + s.shape.reduce((x, y) => x * y, 1), 0);
}

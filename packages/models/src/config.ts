/**
 * `config.json` of a Hugging Face causal LM, normalised for the families pbrl builds (llama,
 * qwen2, qwen3, mistral, gemma3_text, phi3; families.ts says how each differs from Llama). Both
 * the transformers 4 layout (`rope_theta`, `rope_scaling`, `torch_dtype`) and the transformers 5
 * layout (`rope_parameters`, `dtype`) are read. Anything pbrl does not implement is an error here,
 * before any weight is loaded, rather than a silently different model.
 */

import { ModelConfigError } from "./config-error.js";
import { positive, posInt, type Json } from "./config-fields.js";
import type { RopeScaling, RopeSpec } from "./config-rope.js";
import { FAMILY_DEFAULTS, FAMILY_PARSERS, SUPPORTED_MODEL_TYPES, type Architecture, type LayerSpec, type ModelType } from "./families.js";

export type { Architecture, LayerSpec, ModelType, RopeScaling, RopeSpec };
export { SUPPORTED_MODEL_TYPES };

export interface CausalLMConfig {
  modelType: ModelType;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  /** Rotary base and scaling of the global (full-attention) layers: every layer but Gemma 3's local ones. */
  ropeTheta: number;
  ropeScaling: RopeScaling;
  /** Gemma 3's rotary embedding of its sliding-window layers (rope_local_base_freq); undefined elsewhere. */
  localRope: RopeSpec | undefined;
  /** Leading dimensions of each head that RoPE turns: head_dim × partial_rotary_factor (Phi-4-mini 0.75). */
  rotaryDim: number;
  /** Per decoder layer: its attention window and rotary table. */
  layers: LayerSpec[];
  /** How the decoder block departs from Llama's. */
  arch: Architecture;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Biases on the q, k, v projections (Qwen2 always; Llama, Qwen3, Gemma 3 with attention_bias). */
  qkvBias: boolean;
  /** Bias on the output projection (Llama, Qwen3, Gemma 3 with attention_bias; never in Qwen2). */
  oBias: boolean;
  mlpBias: boolean;
  bosTokenId: number | undefined;
  eosTokenIds: number[];
  padTokenId: number | undefined;
  /** Storage dtype named by the checkpoint ("float32", "bfloat16", …). */
  dtype: string | undefined;
  /** The original JSON, kept so a saved checkpoint carries every field it was loaded with. */
  raw: Record<string, unknown>;
  /**
   * Paths in `raw` of whole numbers the file wrote as floats ("15.0"), written back as floats
   * (see config-json.ts); set by loadPretrained, absent for configs built in code.
   */
  integralFloats?: readonly string[];
}

export { ModelConfigError };

function optId(v: unknown): number | undefined {
  return typeof v === "number" && Number.isInteger(v) ? v : undefined;
}

function idList(v: unknown): number[] {
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === "number");
  const id = optId(v);
  return id === undefined ? [] : [id];
}

/** What to do with a checkpoint of an architecture pbrl does not build. */
function unsupportedTypeMessage(modelType: unknown, where: string): string {
  const list = SUPPORTED_MODEL_TYPES.join(", ");
  // A Gemma 3 vision-language checkpoint keeps its language model's config under text_config.
  const hint =
    modelType === "gemma3" ? '; for a multimodal Gemma 3 checkpoint, use its text-only counterpart (model_type "gemma3_text", e.g. google/gemma-3-1b-it)' : "";
  return `${where}: model_type ${JSON.stringify(modelType)} is not supported; pbrl implements ${list}${hint}`;
}

/** Validates and normalises a parsed `config.json`. `where` names its source in errors. */
export function parseModelConfig(raw: Json, where = "config.json"): CausalLMConfig {
  // Typed as an object, but it comes from a user's file: `[]` or `null` parse as JSON too.
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ModelConfigError(`${where}: must be a JSON object of model settings, got ${JSON.stringify(raw)}`);
  const modelType = raw["model_type"];
  if (typeof modelType !== "string" || !(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType))
    throw new ModelConfigError(unsupportedTypeMessage(modelType, where));
  const family = modelType as ModelType;
  const defaults = FAMILY_DEFAULTS[family];
  if (raw["quantization_config"] !== undefined) throw new ModelConfigError(`${where}: quantized checkpoints are not supported (quantization_config is set)`);
  const dropout = raw["attention_dropout"] ?? 0;
  if (dropout !== 0)
    throw new ModelConfigError(`${where}: attention_dropout=${JSON.stringify(dropout)} is not supported; pbrl trains without dropout (set it to 0.0)`);
  const hiddenSize = posInt(raw, "hidden_size", where);
  const numHeads = posInt(raw, "num_attention_heads", where);
  const numKvHeads = posInt(raw, "num_key_value_heads", where, numHeads);
  if (numHeads % numKvHeads !== 0)
    throw new ModelConfigError(`${where}: num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`);
  if (raw["head_dim"] == null && defaults.headDim === undefined && hiddenSize % numHeads !== 0) {
    throw new ModelConfigError(
      `${where}: hidden_size (${hiddenSize}) is not a multiple of num_attention_heads (${numHeads}) and head_dim is not set; set head_dim or fix the sizes`,
    );
  }
  const headDim = posInt(raw, "head_dim", where, defaults.headDim ?? hiddenSize / numHeads);
  if (headDim % 2 !== 0) throw new ModelConfigError(`${where}: head_dim must be even for rotary embeddings, got ${headDim}`);
  const numLayers = posInt(raw, "num_hidden_layers", where);
  const maxPositionEmbeddings = posInt(raw, "max_position_embeddings", where, defaults.maxPositions);
  const parts = FAMILY_PARSERS[family]({ raw, where, modelType: family, hiddenSize, headDim, numLayers, maxPositions: maxPositionEmbeddings });
  const dtype = raw["dtype"] ?? raw["torch_dtype"];
  const tie = raw["tie_word_embeddings"];
  return {
    modelType: family,
    vocabSize: posInt(raw, "vocab_size", where),
    hiddenSize,
    intermediateSize: posInt(raw, "intermediate_size", where),
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positive(
      raw,
      "rms_norm_eps",
      where,
      defaults.rmsNormEps,
      "RMSNorm divides by √(mean(x²) + eps), so eps ≤ 0 turns hidden states into NaN",
      "1e-5 or 1e-6 in every supported family",
    ),
    ropeTheta: parts.rope.theta,
    ropeScaling: parts.rope.scaling,
    localRope: parts.localRope,
    rotaryDim: parts.rotaryDim,
    layers: parts.layers,
    arch: parts.arch,
    maxPositionEmbeddings,
    tieWordEmbeddings: typeof tie === "boolean" ? tie : defaults.tieWordEmbeddings,
    qkvBias: parts.qkvBias,
    oBias: parts.oBias,
    mlpBias: parts.mlpBias,
    bosTokenId: optId(raw["bos_token_id"]),
    eosTokenIds: idList(raw["eos_token_id"]),
    padTokenId: optId(raw["pad_token_id"]),
    dtype: typeof dtype === "string" ? dtype : undefined,
    raw: { ...raw },
  };
}

/** The config.json pbrl writes: the loaded fields, with the storage dtype updated. */
export function serializeModelConfig(config: CausalLMConfig, dtype: string): Record<string, unknown> {
  const out: Record<string, unknown> = { ...config.raw, dtype };
  if ("torch_dtype" in out) out["torch_dtype"] = dtype;
  return out;
}

/** Builds a config.json object for a fresh Llama-style model (benchmarks, tests, the demo). */
export function llamaConfigJson(options: {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads?: number;
  ropeTheta?: number;
  maxPositionEmbeddings?: number;
  tieWordEmbeddings?: boolean;
  bosTokenId?: number;
  eosTokenId?: number;
  padTokenId?: number;
}): Record<string, unknown> {
  return {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    vocab_size: options.vocabSize,
    hidden_size: options.hiddenSize,
    intermediate_size: options.intermediateSize,
    num_hidden_layers: options.numLayers,
    num_attention_heads: options.numHeads,
    num_key_value_heads: options.numKvHeads ?? options.numHeads,
    head_dim: options.hiddenSize / options.numHeads,
    hidden_act: "silu",
    rms_norm_eps: 1e-5,
    rope_parameters: { rope_type: "default", rope_theta: options.ropeTheta ?? 10000 },
    max_position_embeddings: options.maxPositionEmbeddings ?? 2048,
    tie_word_embeddings: options.tieWordEmbeddings ?? true,
    attention_bias: false,
    attention_dropout: 0.0,
    mlp_bias: false,
    initializer_range: 0.02,
    bos_token_id: options.bosTokenId ?? 1,
    eos_token_id: options.eosTokenId ?? 2,
    pad_token_id: options.padTokenId ?? 0,
    dtype: "float32",
  };
}

/**
 * `config.json` of a Hugging Face causal LM, normalised for the Llama/Qwen2 family. Both the
 * transformers 4 layout (`rope_theta`, `rope_scaling`, `torch_dtype`) and the transformers 5
 * layout (`rope_parameters`, `dtype`) are read. Anything pbrl does not implement is an error here,
 * before any weight is loaded, rather than a silently different model.
 */

import { ModelConfigError } from "./config-error.js";
import { num, optObject, positive, posInt, type Json } from "./config-fields.js";

export type ModelType = "llama" | "qwen2";
export const SUPPORTED_MODEL_TYPES: readonly ModelType[] = ["llama", "qwen2"];

export type RopeScaling =
  | { type: "default" }
  | { type: "linear"; factor: number }
  | { type: "llama3"; factor: number; lowFreqFactor: number; highFreqFactor: number; originalMaxPositionEmbeddings: number };

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
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Biases on the q, k, v projections (Qwen2 always; Llama with attention_bias). */
  qkvBias: boolean;
  /** Bias on the output projection (Llama with attention_bias; never in Qwen2). */
  oBias: boolean;
  mlpBias: boolean;
  bosTokenId: number | undefined;
  eosTokenIds: number[];
  padTokenId: number | undefined;
  /** Storage dtype named by the checkpoint ("float32", "bfloat16", …). */
  dtype: string | undefined;
  /** The original JSON, kept so a saved checkpoint carries every field it was loaded with. */
  raw: Record<string, unknown>;
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

const THETA_WHY = "it is the base of the rotary frequencies 1/theta^(2i/d)";
const THETA_USUAL = "commonly 10000, 500000 or 1000000";

function parseRope(raw: Json, where: string): { theta: number; scaling: RopeScaling } {
  // transformers 5 keeps theta and scaling together in rope_parameters; 4.x splits them.
  const key = raw["rope_parameters"] !== undefined && raw["rope_parameters"] !== null ? "rope_parameters" : "rope_scaling";
  const params = optObject(raw, key, where) ?? null;
  const theta = params?.["rope_theta"] != null ? positive(params, "rope_theta", `${where} ${key}`, undefined, THETA_WHY, THETA_USUAL) : positive(raw, "rope_theta", where, 10000, THETA_WHY, THETA_USUAL);
  if (params === null) return { theta, scaling: { type: "default" } };
  const type = String(params["rope_type"] ?? params["type"] ?? "default");
  const factor = (): number => positive(params, "factor", `${where} rope ${type} scaling`, undefined, "rotary frequencies are divided by it", "as in the model's original config, e.g. 8 for Llama 3.1");
  switch (type) {
    case "default":
      return { theta, scaling: { type: "default" } };
    case "linear":
      return { theta, scaling: { type: "linear", factor: factor() } };
    case "llama3": {
      const at = `${where} rope llama3`;
      const lowFreqFactor = positive(params, "low_freq_factor", at, undefined, "wavelengths are divided by it", "1 for Llama 3.1");
      const highFreqFactor = num(params, "high_freq_factor", at);
      // The smoothing between the two bands divides by their difference.
      if (!(highFreqFactor > lowFreqFactor)) throw new ModelConfigError(`${at}: high_freq_factor (${highFreqFactor}) must be greater than low_freq_factor (${lowFreqFactor}); Llama 3.1 uses 4 and 1`);
      return {
        theta,
        scaling: { type: "llama3", factor: factor(), lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings: posInt(params, "original_max_position_embeddings", at) },
      };
    }
    default:
      throw new ModelConfigError(`${where}: rope type "${type}" is not supported; pbrl implements default, linear and llama3`);
  }
}

/** Validates and normalises a parsed `config.json`. `where` names its source in errors. */
export function parseModelConfig(raw: Json, where = "config.json"): CausalLMConfig {
  // Typed as an object, but it comes from a user's file: `[]` or `null` parse as JSON too.
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new ModelConfigError(`${where}: must be a JSON object of model settings, got ${JSON.stringify(raw)}`);
  const modelType = raw["model_type"];
  if (typeof modelType !== "string" || !(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType)) {
    throw new ModelConfigError(`${where}: model_type ${JSON.stringify(modelType)} is not supported; pbrl implements ${SUPPORTED_MODEL_TYPES.join(", ")} (Llama/Qwen2 family)`);
  }
  const act = raw["hidden_act"] ?? "silu";
  if (act !== "silu") throw new ModelConfigError(`${where}: hidden_act ${JSON.stringify(act)} is not supported; pbrl implements "silu" (SwiGLU)`);
  if (raw["quantization_config"] !== undefined) throw new ModelConfigError(`${where}: quantized checkpoints are not supported (quantization_config is set)`);
  const dropout = raw["attention_dropout"] ?? 0;
  if (dropout !== 0) throw new ModelConfigError(`${where}: attention_dropout=${JSON.stringify(dropout)} is not supported; pbrl trains without dropout (set it to 0.0)`);
  if (raw["use_sliding_window"] === true) throw new ModelConfigError(`${where}: use_sliding_window=true is not supported; pbrl implements full attention`);
  const layerTypes = raw["layer_types"];
  if (Array.isArray(layerTypes) && layerTypes.some((t) => t !== "full_attention")) {
    throw new ModelConfigError(`${where}: layer_types ${JSON.stringify(layerTypes)} include non-full attention, which pbrl does not implement`);
  }
  const hiddenSize = posInt(raw, "hidden_size", where);
  const numHeads = posInt(raw, "num_attention_heads", where);
  const numKvHeads = posInt(raw, "num_key_value_heads", where, numHeads);
  if (numHeads % numKvHeads !== 0) throw new ModelConfigError(`${where}: num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads})`);
  if (raw["head_dim"] == null && hiddenSize % numHeads !== 0) {
    throw new ModelConfigError(`${where}: hidden_size (${hiddenSize}) is not a multiple of num_attention_heads (${numHeads}) and head_dim is not set; set head_dim or fix the sizes`);
  }
  const headDim = posInt(raw, "head_dim", where, hiddenSize / numHeads);
  if (headDim % 2 !== 0) throw new ModelConfigError(`${where}: head_dim must be even for rotary embeddings, got ${headDim}`);
  const { theta, scaling } = parseRope(raw, where);
  const attentionBias = raw["attention_bias"] === true;
  const isQwen2 = modelType === "qwen2";
  const dtype = raw["dtype"] ?? raw["torch_dtype"];
  return {
    modelType: modelType as ModelType,
    vocabSize: posInt(raw, "vocab_size", where),
    hiddenSize,
    intermediateSize: posInt(raw, "intermediate_size", where),
    numLayers: posInt(raw, "num_hidden_layers", where),
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: positive(raw, "rms_norm_eps", where, 1e-6, "RMSNorm divides by √(mean(x²) + eps), so eps ≤ 0 turns hidden states into NaN", "Llama and Qwen2 use 1e-5 or 1e-6"),
    ropeTheta: theta,
    ropeScaling: scaling,
    maxPositionEmbeddings: posInt(raw, "max_position_embeddings", where, 2048),
    tieWordEmbeddings: raw["tie_word_embeddings"] === true,
    qkvBias: isQwen2 || attentionBias,
    oBias: !isQwen2 && attentionBias,
    mlpBias: !isQwen2 && raw["mlp_bias"] === true,
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

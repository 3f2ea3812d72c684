/**
 * The model families pbrl builds, each described by how it differs from Llama — in the spirit of
 * transformers' modular files, where Qwen3 is "Qwen2 plus q/k norms" and Gemma 3 "Llama with
 * sandwich norms, GeGLU, logit soft-capping and local layers". One decoder (decoder-layer.ts) runs
 * them all from the {@link Architecture} and {@link LayerSpec}s parsed here; every default below
 * is the one of the family's transformers config class, used when config.json leaves a field out.
 */
import { ModelConfigError } from "./config-error.js";
import { num, optObject, positive, posInt, type Json } from "./config-fields.js";
import { parseRopeObject, ropeObject, rotaryDimension, type RopeSpec } from "./config-rope.js";

export type ModelType = "llama" | "qwen2" | "qwen3" | "mistral" | "gemma3_text" | "phi3";
export const SUPPORTED_MODEL_TYPES: readonly ModelType[] = ["llama", "qwen2", "qwen3", "mistral", "gemma3_text", "phi3"];

/** How a family's decoder block departs from Llama's. */
export interface Architecture {
  /** The MLP's gate activation: SwiGLU's silu, or GeGLU's tanh-approximated GELU (Gemma). */
  activation: "silu" | "gelu_pytorch_tanh";
  /** RMSNorm scales by (1 + weight), Gemma's form, instead of by weight; fresh norms then hold 0. */
  normPlusOne: boolean;
  /** RMSNorm over each query and key head before RoPE (q_norm, k_norm: Qwen3, Gemma 3). */
  qkNorm: boolean;
  /**
   * Gemma 3's four norms per layer: the attention and MLP outputs are normed before each residual
   * add (post_attention_layernorm, post_feedforward_layernorm), the MLP input by
   * pre_feedforward_layernorm.
   */
  sandwichNorms: boolean;
  /** q, k, v in one qkv_proj weight and gate, up in one gate_up_proj (Phi-3's checkpoint layout). */
  fusedProjections: boolean;
  /** Embeddings are multiplied by this (Gemma: √hidden_size, rounded to the float32 weights' dtype). */
  embedScale: number | undefined;
  /** Multiplier of q·kᵀ: 1/√head_dim, Gemma's 1/√query_pre_attn_scalar. */
  attentionScale: number;
  /** Logits become cap·tanh(logits/cap) (final_logit_softcapping). */
  finalLogitSoftcap: number | undefined;
}

/** One decoder layer's attention. */
export interface LayerSpec {
  /** A query sees only the last `window` positions, itself included; undefined: every earlier one. */
  window: number | undefined;
  /** Its rotary table: the model's, or Gemma 3's local one for sliding layers. */
  rope: "global" | "local";
}

/** What a family's parser returns, on top of the fields every family reads alike. */
export interface FamilyParts {
  arch: Architecture;
  qkvBias: boolean;
  oBias: boolean;
  mlpBias: boolean;
  layers: LayerSpec[];
  rope: RopeSpec;
  localRope: RopeSpec | undefined;
  rotaryDim: number;
}

/** The shape fields the family parsers read, already validated. */
export interface FamilyInput {
  raw: Json;
  where: string;
  modelType: ModelType;
  hiddenSize: number;
  headDim: number;
  numLayers: number;
  maxPositions: number;
}

/** Defaults of the family's config class where they differ from Llama's. */
export interface FamilyDefaults {
  /** head_dim when absent (Qwen3 128, Gemma 3 256); undefined: hidden_size / num_attention_heads. */
  headDim: number | undefined;
  tieWordEmbeddings: boolean;
  rmsNormEps: number;
  maxPositions: number;
}

export const FAMILY_DEFAULTS: Record<ModelType, FamilyDefaults> = {
  llama: { headDim: undefined, tieWordEmbeddings: false, rmsNormEps: 1e-6, maxPositions: 2048 },
  qwen2: { headDim: undefined, tieWordEmbeddings: false, rmsNormEps: 1e-6, maxPositions: 32768 },
  qwen3: { headDim: 128, tieWordEmbeddings: false, rmsNormEps: 1e-6, maxPositions: 32768 },
  mistral: { headDim: undefined, tieWordEmbeddings: false, rmsNormEps: 1e-6, maxPositions: 131072 },
  gemma3_text: { headDim: 256, tieWordEmbeddings: true, rmsNormEps: 1e-6, maxPositions: 131072 },
  phi3: { headDim: undefined, tieWordEmbeddings: false, rmsNormEps: 1e-5, maxPositions: 4096 },
};

const LLAMA_ARCH = (headDim: number): Architecture => ({
  activation: "silu",
  normPlusOne: false,
  qkNorm: false,
  sandwichNorms: false,
  fusedProjections: false,
  embedScale: undefined,
  attentionScale: 1 / Math.sqrt(headDim),
  finalLogitSoftcap: undefined,
});

function requireSilu(f: FamilyInput): void {
  const act = f.raw["hidden_act"] ?? "silu";
  if (act !== "silu")
    throw new ModelConfigError(`${f.where}: hidden_act ${JSON.stringify(act)} is not supported for ${f.modelType}; pbrl implements "silu" (SwiGLU) there`);
}

/** A window length: a positive integer, or undefined for null. */
function windowField(raw: Json, where: string, fallback: number | undefined): number | undefined {
  if (raw["sliding_window"] === undefined) return fallback;
  if (raw["sliding_window"] === null) return undefined;
  return posInt(raw, "sliding_window", where);
}

/** Rotary embedding from the config's single rope object (every family but Gemma 3). */
function singleRope(f: FamilyInput, partialAllowed: boolean, originalMax?: number): { rope: RopeSpec; rotaryDim: number } {
  const { key, params } = ropeObject(f.raw, f.where);
  const rotaryDim = rotaryDimension(f.raw, params, f.headDim, f.where, partialAllowed, f.modelType);
  const rope = parseRopeObject(f.raw, params, key, {
    where: f.where,
    maxPositions: f.maxPositions,
    rotaryDim,
    originalMax,
    defaultTheta: 10000,
    longropeAliases: f.modelType === "phi3",
  });
  return { rope, rotaryDim };
}

const LAYER_TYPES = ["full_attention", "sliding_attention"];

/** layer_types, checked: one known entry per layer. */
function layerTypes(f: FamilyInput): string[] | undefined {
  const v = f.raw["layer_types"];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length !== f.numLayers)
    throw new ModelConfigError(`${f.where}: layer_types must list one entry per layer (${f.numLayers}), got ${JSON.stringify(v)}`);
  v.forEach((t, i) => {
    if (typeof t !== "string" || !LAYER_TYPES.includes(t)) {
      throw new ModelConfigError(
        `${f.where}: layer_types[${i}] ${JSON.stringify(t)} is not supported; pbrl implements "full_attention" and "sliding_attention" layers`,
      );
    }
  });
  return v as string[];
}

/** Layers from layer_types; `localRope`: sliding layers use the local rotary table (Gemma 3). */
function layersFromTypes(f: FamilyInput, types: readonly string[], window: number | undefined, localRope: boolean): LayerSpec[] {
  return types.map((t, i) => {
    if (t !== "sliding_attention") return { window: undefined, rope: "global" };
    if (window === undefined)
      throw new ModelConfigError(
        `${f.where}: layer_types[${i}] is "sliding_attention" but no sliding_window is in effect; set sliding_window (and use_sliding_window=true for ${f.modelType}) or make the layer "full_attention"`,
      );
    return { window, rope: localRope ? "local" : "global" };
  });
}

function parseLlama(f: FamilyInput): FamilyParts {
  requireSilu(f);
  if (f.raw["use_sliding_window"] === true)
    throw new ModelConfigError(
      `${f.where}: use_sliding_window=true is not supported for llama; transformers' Llama attends to every earlier position (remove the field)`,
    );
  const types = layerTypes(f);
  if (types?.some((t) => t !== "full_attention"))
    throw new ModelConfigError(
      `${f.where}: layer_types include sliding layers, which Llama does not have; use model_type "mistral" for a sliding-window Llama layout`,
    );
  const bias = f.raw["attention_bias"] === true;
  return {
    arch: LLAMA_ARCH(f.headDim),
    qkvBias: bias,
    oBias: bias,
    mlpBias: f.raw["mlp_bias"] === true,
    layers: fullLayers(f),
    ...singleRope(f, false),
    localRope: undefined,
  };
}

function fullLayers(f: FamilyInput, window?: number): LayerSpec[] {
  return Array.from({ length: f.numLayers }, () => ({ window, rope: "global" as const }));
}

/**
 * Qwen2 and Qwen3 layers: sliding only with use_sliding_window, then every layer from
 * max_window_layers on unless layer_types says otherwise (Qwen2Config.__post_init__).
 */
function qwenLayers(f: FamilyInput): LayerSpec[] {
  const window = f.raw["use_sliding_window"] === true ? windowField(f.raw, f.where, 4096) : undefined;
  const types = layerTypes(f);
  if (types !== undefined) return layersFromTypes(f, types, window, false);
  const from = posIntOrZero(f.raw, "max_window_layers", f.where, 28);
  return Array.from({ length: f.numLayers }, (_, i) => ({ window: i >= from ? window : undefined, rope: "global" as const }));
}

function posIntOrZero(raw: Json, key: string, where: string, fallback: number): number {
  const v = num(raw, key, where, fallback);
  if (!Number.isSafeInteger(v) || v < 0) throw new ModelConfigError(`${where}: field "${key}" must be an integer ≥ 0, got ${v}`);
  return v;
}

function parseQwen2(f: FamilyInput): FamilyParts {
  requireSilu(f);
  // Qwen2 always has q/k/v biases and never an o_proj or MLP bias.
  return { arch: LLAMA_ARCH(f.headDim), qkvBias: true, oBias: false, mlpBias: false, layers: qwenLayers(f), ...singleRope(f, false), localRope: undefined };
}

function parseQwen3(f: FamilyInput): FamilyParts {
  requireSilu(f);
  const bias = f.raw["attention_bias"] === true;
  return {
    arch: { ...LLAMA_ARCH(f.headDim), qkNorm: true },
    qkvBias: bias,
    oBias: bias,
    mlpBias: false,
    layers: qwenLayers(f),
    ...singleRope(f, false),
    localRope: undefined,
  };
}

function parseMistral(f: FamilyInput): FamilyParts {
  requireSilu(f);
  // MistralConfig's sliding_window defaults to 4096 when the field is absent; null turns it off.
  const window = windowField(f.raw, f.where, 4096);
  return {
    arch: LLAMA_ARCH(f.headDim),
    qkvBias: false,
    oBias: false,
    mlpBias: false,
    layers: fullLayers(f, window),
    ...singleRope(f, false),
    localRope: undefined,
  };
}

function parsePhi3(f: FamilyInput): FamilyParts {
  requireSilu(f);
  for (const key of ["resid_pdrop", "embd_pdrop"]) {
    const p = f.raw[key] ?? 0;
    if (p !== 0) throw new ModelConfigError(`${f.where}: ${key}=${JSON.stringify(p)} is not supported; pbrl trains without dropout (set it to 0.0)`);
  }
  // Phi3Config always has original_max_position_embeddings (default 4096), and transformers gives it priority.
  const originalMax = posInt(f.raw, "original_max_position_embeddings", f.where, 4096);
  return {
    arch: { ...LLAMA_ARCH(f.headDim), fusedProjections: true },
    qkvBias: false,
    oBias: false,
    mlpBias: false,
    layers: fullLayers(f, windowField(f.raw, f.where, undefined)),
    ...singleRope(f, true, originalMax),
    localRope: undefined,
  };
}

/** A soft-capping value: undefined when null or absent, else a number > 0. */
function softcap(raw: Json, key: string, where: string): number | undefined {
  if (raw[key] === undefined || raw[key] === null) return undefined;
  return positive(
    raw,
    key,
    where,
    undefined,
    "values are squashed to cap·tanh(x/cap)",
    "Gemma 2 used 50 for attention and 30 for the logits; null turns it off",
  );
}

function parseGemma3(f: FamilyInput): FamilyParts {
  const { raw, where } = f;
  const act = raw["hidden_activation"] ?? raw["hidden_act"] ?? "gelu_pytorch_tanh";
  if (act !== "gelu_pytorch_tanh")
    throw new ModelConfigError(
      `${where}: hidden_activation ${JSON.stringify(act)} is not supported for gemma3_text; pbrl implements "gelu_pytorch_tanh" (GeGLU), which every Gemma 3 checkpoint uses`,
    );
  if (raw["use_bidirectional_attention"] === true)
    throw new ModelConfigError(
      `${where}: use_bidirectional_attention=true (an encoder such as EmbeddingGemma) is not supported; pbrl implements causal language models, set it to false`,
    );
  const window = windowField(raw, where, 4096);
  const pattern = posInt(raw, raw["sliding_window_pattern"] != null ? "sliding_window_pattern" : "_sliding_window_pattern", where, 6);
  // Gemma3TextConfig's default: every `pattern`-th layer global, the others local.
  const types = layerTypes(f) ?? Array.from({ length: f.numLayers }, (_, i) => ((i + 1) % pattern !== 0 ? "sliding_attention" : "full_attention"));
  const scalar = positive(raw, "query_pre_attn_scalar", where, 256, "queries are scaled by its inverse square root", "256 for Gemma 3, or head_dim");
  const bias = raw["attention_bias"] === true;
  // attn_logit_softcapping is checked but not applied: transformers' Gemma 3 attention (5.18) never
  // passes it to the attention function (Gemma 3 replaced Gemma 2's score capping by q/k norms,
  // and its checkpoints set it to null), so applying it would give logits transformers does not.
  softcap(raw, "attn_logit_softcapping", where);
  // Gemma 3 rotates whole heads: a partial_rotary_factor other than 1 is an error.
  const rotaryDim = rotaryDimension(raw, null, f.headDim, where, false, "gemma3_text");
  const { global, local } = gemmaRopes(f);
  return {
    arch: {
      activation: "gelu_pytorch_tanh",
      normPlusOne: true,
      qkNorm: true,
      sandwichNorms: true,
      fusedProjections: false,
      // Gemma3TextScaledWordEmbedding multiplies by √hidden_size cast to the weights' dtype: float32 here.
      embedScale: Math.fround(Math.sqrt(f.hiddenSize)),
      attentionScale: 1 / Math.sqrt(scalar),
      finalLogitSoftcap: softcap(raw, "final_logit_softcapping", where),
    },
    qkvBias: bias,
    oBias: bias,
    mlpBias: false,
    layers: layersFromTypes(f, types, window, true),
    rope: global,
    localRope: local,
    rotaryDim,
  };
}

/**
 * Gemma 3's two rotary embeddings: transformers 5 nests them in rope_parameters by layer type;
 * 4.x configs give rope_theta and rope_scaling for the global layers and rope_local_base_freq
 * for the local ones (Gemma3TextConfig.convert_rope_params_to_dict).
 */
function gemmaRopes(f: FamilyInput): { global: RopeSpec; local: RopeSpec } {
  const { raw, where } = f;
  const ctx = (defaultTheta: number) => ({ where, maxPositions: f.maxPositions, rotaryDim: f.headDim, originalMax: undefined, defaultTheta });
  const nested = optObject(raw, "rope_parameters", where);
  if (nested !== undefined) {
    if (!("full_attention" in nested) && !("sliding_attention" in nested)) {
      throw new ModelConfigError(
        `${where}: gemma3_text's rope_parameters must hold one entry per layer type, {"full_attention": {…}, "sliding_attention": {…}}, got ${JSON.stringify(nested)}`,
      );
    }
    // Without a theta of its own, an entry takes rope_theta (global) or rope_local_base_freq (local);
    // a layer type saved as null gets the default rope with that theta.
    const entry = (type: string, thetaKey: string, theta: number): RopeSpec => {
      const params = optObject(nested, type, `${where} rope_parameters`) ?? null;
      return parseRopeObject({ rope_theta: raw[thetaKey] }, params, `rope_parameters.${type}`, ctx(theta));
    };
    return { global: entry("full_attention", "rope_theta", 1_000_000), local: entry("sliding_attention", "rope_local_base_freq", 10_000) };
  }
  const scaling = optObject(raw, "rope_scaling", where) ?? null;
  const global = parseRopeObject(raw, scaling, "rope_scaling", ctx(1_000_000));
  const localTheta = positive(raw, "rope_local_base_freq", where, 10_000, "it is the base of the local layers' rotary frequencies", "10000 for Gemma 3");
  return { global, local: { theta: localTheta, scaling: { type: "default" } } };
}

export const FAMILY_PARSERS: Record<ModelType, (f: FamilyInput) => FamilyParts> = {
  llama: parseLlama,
  qwen2: parseQwen2,
  qwen3: parseQwen3,
  mistral: parseMistral,
  gemma3_text: parseGemma3,
  phi3: parsePhi3,
};

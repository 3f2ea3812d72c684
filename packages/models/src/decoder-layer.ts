/**
 * The decoder block every family shares, Llama's pre-norm layer, with each family's departures
 * switched on by its {@link Architecture} (families.ts) at the one place it applies:
 *
 *   x = input_layernorm(h)
 *   q, k, v = q_proj/k_proj/v_proj(x)          Phi-3: one qkv_proj, split
 *   q, k = q_norm(q), k_norm(k) per head        Qwen3, Gemma 3
 *   q, k = rope(q), rope(k)                     Phi-3: the leading rotary_dim dims only;
 *                                               Gemma 3: the local table on sliding layers
 *   a = o_proj(attention(q, k, v))              window, scale and soft-cap per layer
 *   h = h + a                                   Gemma 3: h + post_attention_layernorm(a)
 *   y = post_attention_layernorm(h)             Gemma 3: pre_feedforward_layernorm(h)
 *   m = down_proj(act(gate_proj(y)) · up_proj(y))   silu, or Gemma's tanh GELU; Phi-3: gate_up_proj
 *   h = h + m                                   Gemma 3: h + post_feedforward_layernorm(m)
 *
 * Every op is a tfjs op or one of core-tensor's fused kernels, so the block runs and
 * differentiates on every backend.
 */
import { rmsNorm, rotary, swiglu, tf } from "@pbrl/core-tensor";
import type { CausalAttention } from "./attention.js";
import type { CausalLMConfig } from "./config.js";

/** The weights of one model, as the block reads them. */
export interface BlockWeights {
  get(name: string): tf.Variable;
  /** x · Wᵀ (+ b) of the linear layer `prefix` ("model.layers.0.self_attn.q_proj"). */
  linear(x: tf.Tensor2D, prefix: string, bias: boolean): tf.Tensor2D;
}

/** Rotary cos and sin [B, 1, T, rotary_dim] of one forward call. */
export interface RotaryTables {
  cos: tf.Tensor4D;
  sin: tf.Tensor4D;
}

/** What every layer of one forward call shares, built before the tape starts. */
export interface CallConstants {
  batch: number;
  length: number;
  rotary: { global: RotaryTables; local: RotaryTables | undefined };
  /** Per layer (layers with the same window share one). */
  attention: CausalAttention[];
}

/** RMSNorm over the last axis with weight `name`; Gemma's form scales by (1 + weight). */
export function norm(c: CausalLMConfig, w: BlockWeights, x: tf.Tensor2D, name: string): tf.Tensor2D {
  const weight = w.get(name) as tf.Tensor1D;
  return rmsNorm(x, c.arch.normPlusOne ? (tf.add(weight, 1) as tf.Tensor1D) : weight, c.rmsNormEps);
}

/**
 * PyTorch's GELU with approximate="tanh" (gelu_pytorch_tanh), in its operation order:
 * 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
 */
export function geluTanh<T extends tf.Tensor>(x: T): T {
  const inner = tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI));
  return tf.mul(tf.mul(x, 0.5), tf.add(tf.tanh(inner), 1));
}

/** RoPE on the leading `rotary_dim` dimensions of x [B, H, T, D], the rest passed through (partial rotary). */
function rope(x: tf.Tensor4D, t: RotaryTables): tf.Tensor4D {
  const d = x.shape[3];
  const r = t.cos.shape[3];
  if (r === d) return rotary(x, t.cos, t.sin);
  const turned = rotary(tf.slice(x, [0, 0, 0, 0], [-1, -1, -1, r]), t.cos, t.sin);
  return tf.concat([turned, tf.slice(x, [0, 0, 0, r], [-1, -1, -1, d - r])], 3);
}

/**
 * One layer's attention sub-block on x [B·T, hidden]: returns o_proj's output and the layer's
 * keys and values (the cached ones first) for the cache.
 */
function selfAttention(
  c: CausalLMConfig,
  w: BlockWeights,
  k: CallConstants,
  i: number,
  x: tf.Tensor2D,
  cached: { k: tf.Tensor4D; v: tf.Tensor4D } | undefined,
) {
  const { batch: b, length: t } = k;
  const d = c.headDim;
  const p = `model.layers.${i}.self_attn`;
  const a = c.arch;
  let q: tf.Tensor2D, key: tf.Tensor2D, v: tf.Tensor2D;
  if (a.fusedProjections) {
    [q, key, v] = tf.split(w.linear(x, `${p}.qkv_proj`, c.qkvBias), [c.numHeads * d, c.numKvHeads * d, c.numKvHeads * d], 1) as [
      tf.Tensor2D,
      tf.Tensor2D,
      tf.Tensor2D,
    ];
  } else {
    q = w.linear(x, `${p}.q_proj`, c.qkvBias);
    key = w.linear(x, `${p}.k_proj`, c.qkvBias);
    v = w.linear(x, `${p}.v_proj`, c.qkvBias);
  }
  // [B·T, n·D] → [B, n, T, D], normed per head first when the family has q/k norms.
  const heads = (y: tf.Tensor2D, n: number, normName?: string): tf.Tensor4D => {
    const perHead = normName === undefined ? y : norm(c, w, tf.reshape(y, [b * t * n, d]), normName);
    return tf.transpose(tf.reshape(perHead, [b, t, n, d]), [0, 2, 1, 3]);
  };
  const tables = c.layers[i]!.rope === "local" ? k.rotary.local! : k.rotary.global;
  const qh = rope(heads(q, c.numHeads, a.qkNorm ? `${p}.q_norm.weight` : undefined), tables);
  let kh = rope(heads(key, c.numKvHeads, a.qkNorm ? `${p}.k_norm.weight` : undefined), tables);
  let vh = heads(v, c.numKvHeads);
  if (cached !== undefined) {
    kh = tf.concat([cached.k, kh], 2);
    vh = tf.concat([cached.v, vh], 2);
  }
  const out = w.linear(k.attention[i]!.apply(qh, kh, vh), `${p}.o_proj`, c.oBias);
  return { out, k: kh, v: vh };
}

/** The MLP sub-block on y [B·T, hidden]: gated by silu (SwiGLU) or tanh GELU (GeGLU). */
function mlp(c: CausalLMConfig, w: BlockWeights, i: number, y: tf.Tensor2D): tf.Tensor2D {
  const p = `model.layers.${i}.mlp`;
  let gate: tf.Tensor2D, up: tf.Tensor2D;
  if (c.arch.fusedProjections) {
    [gate, up] = tf.split(w.linear(y, `${p}.gate_up_proj`, c.mlpBias), 2, 1) as [tf.Tensor2D, tf.Tensor2D];
  } else {
    gate = w.linear(y, `${p}.gate_proj`, c.mlpBias);
    up = w.linear(y, `${p}.up_proj`, c.mlpBias);
  }
  const act = c.arch.activation === "silu" ? swiglu(gate, up) : tf.mul(geluTanh(gate), up);
  return w.linear(act as tf.Tensor2D, `${p}.down_proj`, c.mlpBias);
}

/**
 * Decoder layer `i` on the residual stream h [B·T, hidden]. Returns the new stream and the
 * layer's keys and values (cached ones included) for a KV cache.
 */
export function decoderLayer(
  c: CausalLMConfig,
  w: BlockWeights,
  k: CallConstants,
  i: number,
  h: tf.Tensor2D,
  cached: { k: tf.Tensor4D; v: tf.Tensor4D } | undefined,
): { h: tf.Tensor2D; k: tf.Tensor4D; v: tf.Tensor4D } {
  const p = `model.layers.${i}`;
  const sandwich = c.arch.sandwichNorms;
  const attn = selfAttention(c, w, k, i, norm(c, w, h, `${p}.input_layernorm.weight`), cached);
  let out = attn.out;
  if (sandwich) out = norm(c, w, out, `${p}.post_attention_layernorm.weight`);
  h = tf.add(h, out) as tf.Tensor2D;
  const y = norm(c, w, h, sandwich ? `${p}.pre_feedforward_layernorm.weight` : `${p}.post_attention_layernorm.weight`);
  let m = mlp(c, w, i, y);
  if (sandwich) m = norm(c, w, m, `${p}.post_feedforward_layernorm.weight`);
  return { h: tf.add(h, m) as tf.Tensor2D, k: attn.k, v: attn.v };
}

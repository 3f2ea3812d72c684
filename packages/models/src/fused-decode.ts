/**
 * Whether core-tensor's fused decoders — the native backend's nativeDecodeStep and libtorch's
 * LibtorchDecoder, one addon call per generated token — can run a model. They implement the Llama
 * layout and nothing else: weight-style RMSNorm, separate q/k/v and gate/up weights, SwiGLU, RoPE
 * over the whole head with one table, 1/√head_dim attention, plain embeddings and logits. So
 * llama, qwen2 and mistral qualify; qwen3 (q/k norms), gemma3_text and phi3 (fused weights,
 * partial rotary) decode with the generic tfjs path, which runs on every backend.
 *
 * Each step's rotary tables come from the model (CausalLM.rotaryTables), so every scaling rule is
 * the generic path's. A sliding window, which the decoders do not know, goes in through each
 * step's key mask (windowedKeyMask): for a single query that mask is the whole rule. It takes one
 * mask for all layers, so a model qualifies when every layer has the same window (Mistral), not
 * when layers differ (a Qwen2 with some sliding layers).
 */
import type { tf } from "@pbrl/core-tensor";
import type { CausalLMConfig } from "./config.js";

/** The weights the fused decoders read, by role: HF layout ([out, in] projections), biases undefined when the model has none. */
export interface DecodeWeights {
  embed: tf.Tensor;
  finalNorm: tf.Tensor;
  lmHead: tf.Tensor;
  layers: {
    inputNorm: tf.Tensor;
    q: tf.Tensor;
    k: tf.Tensor;
    v: tf.Tensor;
    o: tf.Tensor;
    qBias?: tf.Tensor | undefined;
    kBias?: tf.Tensor | undefined;
    vBias?: tf.Tensor | undefined;
    oBias?: tf.Tensor | undefined;
    postNorm: tf.Tensor;
    gate: tf.Tensor;
    up: tf.Tensor;
    down: tf.Tensor;
    gateBias?: tf.Tensor | undefined;
    upBias?: tf.Tensor | undefined;
    downBias?: tf.Tensor | undefined;
  }[];
}

/** The weights in the order the decoding kernels take them (core-tensor's nativeDecodeStep, LibtorchDecoder). */
export function decodeKernelOrder(w: DecodeWeights): (tf.Tensor | undefined)[] {
  const list: (tf.Tensor | undefined)[] = [w.embed, w.finalNorm, w.lmHead];
  for (const l of w.layers)
    list.push(l.inputNorm, l.q, l.k, l.v, l.o, l.qBias, l.kBias, l.vBias, l.oBias, l.postNorm, l.gate, l.up, l.down, l.gateBias, l.upBias, l.downBias);
  return list;
}

export type FusedDecodeSupport = { ok: true; window: number | undefined } | { ok: false; reason: string };

export function fusedDecodeSupport(c: CausalLMConfig): FusedDecodeSupport {
  const a = c.arch;
  const reasons: string[] = [];
  if (a.qkNorm) reasons.push("q/k norms");
  if (a.sandwichNorms) reasons.push("post-attention and feed-forward norms");
  if (a.normPlusOne) reasons.push("(1 + weight) RMSNorm");
  if (a.fusedProjections) reasons.push("fused qkv_proj/gate_up_proj weights");
  if (a.activation !== "silu") reasons.push(`${a.activation} activation`);
  if (a.embedScale !== undefined) reasons.push("scaled embeddings");
  if (a.finalLogitSoftcap !== undefined) reasons.push("logit soft-capping");
  if (Math.fround(a.attentionScale) !== Math.fround(1 / Math.sqrt(c.headDim))) reasons.push("attention scale other than 1/√head_dim");
  if (c.rotaryDim !== c.headDim) reasons.push("partial rotary embeddings");
  if (c.layers.some((l) => l.rope !== "global")) reasons.push("a second rotary table for local layers");
  const windows = new Set(c.layers.map((l) => l.window));
  if (windows.size > 1) reasons.push("layers with different attention windows");
  if (reasons.length > 0) return { ok: false, reason: reasons.join(", ") };
  return { ok: true, window: c.layers[0]?.window };
}

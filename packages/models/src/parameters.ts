import type { CausalLMConfig } from "./config.js";

/** One weight of the model, with its Hugging Face name and PyTorch shape ([out, in] for linears). */
export interface ParameterSpec {
  name: string;
  shape: number[];
  kind: "embedding" | "linear" | "bias" | "norm";
}

/** Every weight a Llama/Qwen2 causal LM of this config has, in Hugging Face naming. */
export function parameterSpecs(c: CausalLMConfig): ParameterSpec[] {
  const specs: ParameterSpec[] = [{ name: "model.embed_tokens.weight", shape: [c.vocabSize, c.hiddenSize], kind: "embedding" }];
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}`;
    specs.push({ name: `${p}.input_layernorm.weight`, shape: [c.hiddenSize], kind: "norm" });
    for (const [proj, out] of [["q_proj", qDim], ["k_proj", kvDim], ["v_proj", kvDim]] as const) {
      specs.push({ name: `${p}.self_attn.${proj}.weight`, shape: [out, c.hiddenSize], kind: "linear" });
      if (c.qkvBias) specs.push({ name: `${p}.self_attn.${proj}.bias`, shape: [out], kind: "bias" });
    }
    specs.push({ name: `${p}.self_attn.o_proj.weight`, shape: [c.hiddenSize, qDim], kind: "linear" });
    if (c.oBias) specs.push({ name: `${p}.self_attn.o_proj.bias`, shape: [c.hiddenSize], kind: "bias" });
    specs.push({ name: `${p}.post_attention_layernorm.weight`, shape: [c.hiddenSize], kind: "norm" });
    for (const [proj, shape] of [
      ["gate_proj", [c.intermediateSize, c.hiddenSize]],
      ["up_proj", [c.intermediateSize, c.hiddenSize]],
      ["down_proj", [c.hiddenSize, c.intermediateSize]],
    ] as const) {
      specs.push({ name: `${p}.mlp.${proj}.weight`, shape: [...shape], kind: "linear" });
      if (c.mlpBias) specs.push({ name: `${p}.mlp.${proj}.bias`, shape: [shape[0]], kind: "bias" });
    }
  }
  specs.push({ name: "model.norm.weight", shape: [c.hiddenSize], kind: "norm" });
  if (!c.tieWordEmbeddings) specs.push({ name: "lm_head.weight", shape: [c.vocabSize, c.hiddenSize], kind: "linear" });
  return specs;
}

/** Checkpoint entries that are not weights (buffers older exports carry) and are safely ignored. */
export function isIgnorableCheckpointEntry(name: string, c: CausalLMConfig): boolean {
  return name.endsWith(".rotary_emb.inv_freq") || (c.tieWordEmbeddings && name === "lm_head.weight");
}

import type { CausalLMConfig } from "./config.js";

/** One weight of the model, with its Hugging Face name and PyTorch shape ([out, in] for linears). */
export interface ParameterSpec {
  name: string;
  shape: number[];
  kind: "embedding" | "linear" | "bias" | "norm";
  /** What a fresh norm weight holds: 1, or 0 for Gemma's (1 + weight) RMSNorm. Norms only. */
  normInit?: 0 | 1;
}

/**
 * Every weight a causal LM of this config has, in Hugging Face naming and order of use: per
 * layer the input norm, attention (q/k/v or Phi-3's fused qkv_proj, q/k norms, o), the norms
 * around the MLP (Gemma 3 has four per layer) and the MLP (gate/up or Phi-3's fused gate_up_proj).
 */
export function parameterSpecs(c: CausalLMConfig): ParameterSpec[] {
  const a = c.arch;
  const normInit = a.normPlusOne ? 0 : 1;
  const norm = (name: string, size = c.hiddenSize): ParameterSpec => ({ name, shape: [size], kind: "norm", normInit });
  const specs: ParameterSpec[] = [{ name: "model.embed_tokens.weight", shape: [c.vocabSize, c.hiddenSize], kind: "embedding" }];
  const linear = (name: string, out: number, inp: number, bias: boolean): void => {
    specs.push({ name: `${name}.weight`, shape: [out, inp], kind: "linear" });
    if (bias) specs.push({ name: `${name}.bias`, shape: [out], kind: "bias" });
  };
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  for (let i = 0; i < c.numLayers; i++) {
    const p = `model.layers.${i}`;
    specs.push(norm(`${p}.input_layernorm.weight`));
    if (a.fusedProjections) linear(`${p}.self_attn.qkv_proj`, qDim + 2 * kvDim, c.hiddenSize, c.qkvBias);
    else
      for (const [proj, out] of [
        ["q_proj", qDim],
        ["k_proj", kvDim],
        ["v_proj", kvDim],
      ] as const)
        linear(`${p}.self_attn.${proj}`, out, c.hiddenSize, c.qkvBias);
    if (a.qkNorm) specs.push(norm(`${p}.self_attn.q_norm.weight`, c.headDim), norm(`${p}.self_attn.k_norm.weight`, c.headDim));
    linear(`${p}.self_attn.o_proj`, c.hiddenSize, qDim, c.oBias);
    specs.push(norm(`${p}.post_attention_layernorm.weight`));
    if (a.sandwichNorms) specs.push(norm(`${p}.pre_feedforward_layernorm.weight`), norm(`${p}.post_feedforward_layernorm.weight`));
    if (a.fusedProjections) linear(`${p}.mlp.gate_up_proj`, 2 * c.intermediateSize, c.hiddenSize, c.mlpBias);
    else for (const proj of ["gate_proj", "up_proj"]) linear(`${p}.mlp.${proj}`, c.intermediateSize, c.hiddenSize, c.mlpBias);
    linear(`${p}.mlp.down_proj`, c.hiddenSize, c.intermediateSize, c.mlpBias);
  }
  specs.push(norm("model.norm.weight"));
  if (!c.tieWordEmbeddings) specs.push({ name: "lm_head.weight", shape: [c.vocabSize, c.hiddenSize], kind: "linear" });
  return specs;
}

/** Checkpoint entries that are not weights (buffers older exports carry) and are safely ignored. */
export function isIgnorableCheckpointEntry(name: string, c: CausalLMConfig): boolean {
  return name.endsWith(".rotary_emb.inv_freq") || (c.tieWordEmbeddings && name === "lm_head.weight");
}

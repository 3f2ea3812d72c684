// LoRA views of a model: what PEFT's init gives, what trains, what is shared, and the target rules.
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AdamW, RngStream, tf } from "@pbrl/core-tensor";
import {
  buildScoringBatch,
  CausalLM,
  completionLogProbs,
  DEFAULT_LORA,
  llamaConfigJson,
  loadPretrained,
  loraTargets,
  LoraSettingsError,
  parseModelConfig,
} from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

const tiny = (name = "tiny-llama") => loadPretrained(path.join(FIXTURES, name));
const allLinear = { ...DEFAULT_LORA, r: 4, alpha: 8, targetModules: "all-linear" as const };

function nll(model: CausalLM, name = "tiny-llama"): () => tf.Scalar {
  const items = reference(name).logprobs.items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids }));
  const batch = buildScoringBatch(items, 0);
  return () => {
    const { tokens, sums } = completionLogProbs(model, batch);
    tokens.dispose();
    return tf.neg(tf.mean(sums)) as tf.Scalar;
  };
}

const logitsOf = (m: CausalLM, ids: number[]) => tf.tidy(() => Array.from(m.forward({ ids: Int32Array.from(ids), batch: 1, length: ids.length }).dataSync()));

describe("a LoRA view", () => {
  afterEach(() => expect(tf.memory().numTensors).toBe(0));

  it("a forward pass holds one layer's intermediates at a time: the peak does not grow with the depth (LoRA models generate through tfjs ops)", async () => {
    const peakOfForward = async (layers: number): Promise<number> => {
      const config = parseModelConfig(llamaConfigJson({ vocabSize: 64, hiddenSize: 64, intermediateSize: 256, numLayers: layers, numHeads: 4, numKvHeads: 2 }));
      const base = CausalLM.randomInit(config, RngStream.fromSeed(3, "deep"));
      const lora = base.withLora(allLinear, RngStream.fromSeed(1, "lora"));
      const ids = Int32Array.from({ length: 4 * 32 }, (_, i) => (i * 7) % 64);
      const live = tf.memory().numBytes;
      const profile = await tf.profile(() => tf.dispose(lora.hidden({ ids, batch: 4, length: 32 })));
      lora.dispose();
      base.dispose();
      return profile.peakBytes - live;
    };
    const shallow = await peakOfForward(2);
    const deep = await peakOfForward(12);
    // Each layer's output stays until the pass ends (4 × 32 × 64 floats, 32 KB a layer); everything else is freed per layer.
    expect(deep - shallow).toBeLessThan(10 * 4 * 32 * 64 * 4 * 1.5);
  });

  it("starts as PEFT does: A ~ U(±1/√in), B = 0, so the outputs are the base model's bit for bit", async () => {
    const base = (await tiny()).model;
    const lora = base.withLora(allLinear, RngStream.fromSeed(1, "lora"));
    const ids = reference("tiny-llama").prompts[1]!.input_ids;
    expect(logitsOf(lora, ids)).toEqual(logitsOf(base, ids));
    for (const [m, f] of lora.adapter!.modules) {
      const inp = base.params.get(`${m}.weight`)!.shape[1]!;
      const a = f.a.dataSync();
      expect(f.a.shape).toEqual([4, inp]);
      expect(Math.max(...Array.from(a, Math.abs))).toBeLessThanOrEqual(1 / Math.sqrt(inp));
      expect(Math.max(...Array.from(a, Math.abs))).toBeGreaterThan(0.5 / Math.sqrt(inp));
      expect([...f.b.dataSync()].every((x) => x === 0)).toBe(true);
      expect(f.scaling).toBe(2);
    }
    lora.dispose();
    base.dispose();
  });

  it("trains only its factors: the gradient reaches every A and B, AdamW moves them and lowers the loss, the base stays as loaded", async () => {
    const base = (await tiny()).model;
    const before = base.hostWeights();
    const lora = base.withLora(allLinear, RngStream.fromSeed(2, "lora"));
    expect(lora.trainableVariables().map((v) => v.name)).toEqual(lora.adapter!.variables().map((v) => v.name));
    expect(lora.numTrainableParameters()).toBe(lora.adapter!.numParameters());
    const opt = new AdamW(lora.params, { lr: 1e-2, weightDecay: 0 });
    const losses: number[] = [];
    for (let step = 0; step < 3; step++) {
      const { value, grads } = tf.variableGrads(nll(lora), lora.trainableVariables());
      const named = lora.gradsByWeightName(grads);
      expect([...named.keys()].sort()).toEqual([...lora.adapter!.namedVariables().keys()].sort());
      // B starts at zero, so A's first gradient is zero; B's is not.
      if (step > 0) for (const [, g] of named) expect(tf.tidy(() => tf.max(tf.abs(g)).dataSync()[0]!)).toBeGreaterThan(0);
      opt.step(named);
      losses.push(value.dataSync()[0]!);
      tf.dispose([value, ...named.values()]);
    }
    expect(losses[2]!).toBeLessThan(losses[0]!);
    const after = base.hostWeights();
    for (const [name, t] of before) expect(after.get(name)!.data).toEqual(t.data);
    opt.dispose();
    lora.dispose();
    base.dispose();
  });

  it("shares the base weights with every view and clone: no copy, freed when the last view goes", async () => {
    const loaded = (await tiny()).model;
    const baseTensors = tf.memory().numTensors;
    const a = loaded.withLora(allLinear, RngStream.fromSeed(3, "a"));
    const b = loaded.withLora(allLinear, RngStream.fromSeed(4, "b"));
    const adapterTensors = a.adapter!.variables().length;
    expect(tf.memory().numTensors).toBe(baseTensors + 2 * adapterTensors);
    const copy = a.clone();
    const reference_ = a.baseModel();
    expect(tf.memory().numTensors).toBe(baseTensors + 3 * adapterTensors);
    expect(a.sharesBaseWith(b) && a.sharesBaseWith(copy) && a.sharesBaseWith(reference_) && a.sharesBaseWith(loaded)).toBe(true);
    expect(reference_.adapter).toBeUndefined();
    expect(copy.hostWeights()).toEqual(a.hostWeights());
    loaded.dispose();
    a.dispose();
    b.dispose();
    copy.dispose();
    const ids = reference("tiny-llama").prompts[0]!.input_ids;
    expect(logitsOf(reference_, ids).length).toBeGreaterThan(0); // the last view still reads the base
    reference_.dispose();
  });

  it("copies, saves and restores only its factors (what a training checkpoint holds)", async () => {
    const base = (await tiny()).model;
    const a = base.withLora(allLinear, RngStream.fromSeed(5, "a"));
    const b = base.withLora(allLinear, RngStream.fromSeed(6, "b"));
    const host = a.hostWeights();
    expect([...host.keys()].every((k) => /\.lora_[AB]\.weight$/.test(k))).toBe(true);
    b.assignHostWeights(host);
    expect(b.hostWeights()).toEqual(host);
    const c = base.withLora(allLinear, RngStream.fromSeed(7, "c"));
    c.copyWeightsFrom(a);
    expect(c.hostWeights()).toEqual(host);
    expect(() => c.assignHostWeights(new Map(), "checkpoint x")).toThrow(/checkpoint x: LoRA factor ".*lora_A.weight" is missing/);
    for (const m of [a, b, c, base]) m.dispose();
  });

  it("draws dropout masks from the stream it is given, in training only, the same for the same stream", async () => {
    const base = (await tiny()).model;
    const lora = base.withLora({ ...allLinear, dropout: 0.5 }, RngStream.fromSeed(8, "lora"));
    // Make B non-zero so the adapter (and its dropout) changes the output.
    for (const f of lora.adapter!.modules.values()) tf.tidy(() => f.b.assign(tf.onesLike(f.b)));
    const ids = reference("tiny-llama").prompts[1]!.input_ids;
    const plain = logitsOf(lora, ids);
    expect(logitsOf(lora, ids)).toEqual(plain);
    const withDrop = (seed: number) => lora.adapter!.training(RngStream.fromSeed(seed, "dropout"), () => logitsOf(lora, ids));
    expect(withDrop(1)).toEqual(withDrop(1));
    expect(withDrop(1)).not.toEqual(withDrop(2));
    expect(withDrop(1)).not.toEqual(plain);
    expect(logitsOf(lora, ids)).toEqual(plain);
    lora.dispose();
    base.dispose();
  });
});

describe("lora_target_modules", () => {
  it("follows PEFT: the family's default, module names by suffix, all-linear without the output layer", async () => {
    const llama = (await tiny()).model;
    expect(loraTargets(llama.config, undefined)).toEqual([
      "model.layers.0.self_attn.q_proj",
      "model.layers.0.self_attn.v_proj",
      "model.layers.1.self_attn.q_proj",
      "model.layers.1.self_attn.v_proj",
    ]);
    expect(loraTargets(llama.config, ["down_proj"])).toEqual(["model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj"]);
    expect(loraTargets(llama.config, "all-linear")).toHaveLength(14);
    expect(loraTargets(llama.config, "all-linear").some((m) => m.includes("lm_head"))).toBe(false);
    expect(() => loraTargets(llama.config, ["qkv_proj"])).toThrow(
      /"qkv_proj" names no linear layer of this llama model; its linear layers are q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj/,
    );
    llama.dispose();
    const phi3 = (await tiny("tiny-phi3")).model;
    expect(() => loraTargets(phi3.config, undefined)).toThrow(LoraSettingsError);
    expect(() => loraTargets(phi3.config, undefined)).toThrow(
      /PEFT has no default target modules for model_type phi3; name them, e\.g\. lora_target_modules=\["qkv_proj", "o_proj", "gate_up_proj", "down_proj"\]/,
    );
    expect(loraTargets(phi3.config, ["qkv_proj", "gate_up_proj"])).toEqual([
      "model.layers.0.self_attn.qkv_proj",
      "model.layers.0.mlp.gate_up_proj",
      "model.layers.1.self_attn.qkv_proj",
      "model.layers.1.mlp.gate_up_proj",
    ]);
    phi3.dispose();
  });
});

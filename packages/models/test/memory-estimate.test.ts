// The memory estimates against numbers worked out by hand from their formulas (docs/memory.md),
// on a model small enough to count every parameter.
import { describe, expect, it } from "vitest";
import {
  forwardEstimate,
  generationEstimate,
  llamaConfigJson,
  modelSizes,
  parseModelConfig,
  sumEstimates,
  trainingActivationBytes,
  trainingStepEstimate,
  weightsEstimate,
} from "../src/index.js";

// vocab 10, hidden 4, intermediate 6, 2 layers, 2 heads of dim 2, 1 key/value head, untied.
const tiny = parseModelConfig(
  llamaConfigJson({ vocabSize: 10, hiddenSize: 4, intermediateSize: 6, numLayers: 2, numHeads: 2, numKvHeads: 1, tieWordEmbeddings: false }),
);
// SmolLM2-135M's shape.
const smol = parseModelConfig(
  llamaConfigJson({ vocabSize: 49152, hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, tieWordEmbeddings: true }),
);

describe("model sizes", () => {
  it("counts parameters as the model is built", () => {
    // embed 40; per layer: norms 8, q 16, k 8, v 8, o 16, gate/up/down 24 each = 128; final norm 4; lm_head 40.
    expect(modelSizes(tiny)).toEqual({ parameters: 40 + 2 * 128 + 4 + 40, layerProjections: 16 + 8 + 8 + 16 + 72, largestParameter: 40 });
    expect(modelSizes(smol).parameters).toBe(134_515_008);
    expect(weightsEstimate(smol).tensorBytes).toBe(134_515_008 * 4);
  });
});

describe("training step", () => {
  const w = { sequences: 2, seqLen: 3 };

  it("tfjs ops: activations, weights, gradients, moments, optimizer temporaries and fragmentation", () => {
    // 6 tokens × 2 layers × (33·4 + 26·2 + 7.3·6 + 7.2·2 heads·3 keys + 5100) + 3.6 · 2 layers · 120
    // + 0.3 · 10 · 4 (lm head) + 6 · 4 scored positions · 10 (logits), in floats.
    const activations = 4 * (6 * 2 * (132 + 52 + 43.8 + 43.2 + 5100) + 864 + 12 + 240);
    expect(trainingActivationBytes(tiny, { ...w, kernels: "tfjs" })).toBeCloseTo(activations, 6);
    const e = trainingStepEstimate(tiny, { ...w, kernels: "tfjs" });
    const bytes = Object.fromEntries(e.items.map((i) => [i.label.split(" ")[0], i.bytes]));
    expect(bytes).toEqual({
      weights: 1360,
      gradients: 1360,
      AdamW: 2720,
      activations: expect.closeTo(activations, 6) as number,
      "optimizer-step": 14 * 40 * 4,
      heap: expect.closeTo(0.1 * (activations + 2240), 6) as number,
    });
    expect(e.tensorBytes).toBeCloseTo(4 * 1360 + 1.1 * (activations + 2240), 6);
    expect(e.hostBytes).toBe(0);
  });

  it("fused kernels: fewer activations, 3 optimizer temporaries, no fragmentation allowance", () => {
    // 12 × (31.5·4 + 11·2 + 6.8·6 + 1.2·6 + 800) + 0.8·240 + 3.8·40 + 1.5·40 floats.
    const activations = 4 * (12 * (126 + 22 + 40.8 + 7.2 + 800) + 192 + 152 + 60);
    const e = trainingStepEstimate(tiny, { ...w, kernels: "fused" });
    expect(e.items.map((i) => i.label.split(" ")[0])).toEqual(["weights", "gradients", "AdamW", "activations", "optimizer-step"]);
    expect(e.tensorBytes).toBeCloseTo(4 * 1360 + activations + 480, 6);
  });

  it("frozen weights (a LoRA base): no weight-sized gradient temporaries, the rest as before", () => {
    const trains = trainingActivationBytes(tiny, { ...w, kernels: "fused" });
    const frozen = trainingActivationBytes(tiny, { ...w, kernels: "fused", frozenWeights: true });
    // 0.8 floats per layer weight (2 × 120) and 3.8 per output-head weight (40).
    expect(trains - frozen).toBeCloseTo(4 * (0.8 * 240 + 3.8 * 40), 6);
  });

  it("ATen kernels (libtorch): no per-layer weight temporaries, two output-head-sized and one optimizer copy, per-token terms 20% above the fused kernels'", () => {
    const aten = trainingStepEstimate(tiny, { ...w, kernels: "aten" });
    const bytes = Object.fromEntries(aten.items.map((i) => [i.label.split(" ")[0], i.bytes]));
    // 12 × (38·4 + 13.2·2 + 8.2·6 + 1.44·6 + 960) + 2·40 + 1.5·40 floats; the largest parameter has 40.
    expect(bytes["activations"]).toBeCloseTo(4 * (12 * (152 + 26.4 + 49.2 + 8.64 + 960) + 80 + 60), 6);
    expect(bytes["optimizer-step"]).toBe(4 * 40);
  });

  it("counts every scored position's logits when told how many", () => {
    const all = trainingActivationBytes(tiny, { ...w, kernels: "fused" });
    const one = trainingActivationBytes(tiny, { ...w, scoredTokens: 1, kernels: "fused" });
    expect(all - one).toBeCloseTo(4 * 1.5 * 3 * 10, 6);
  });

  it("rejects impossible counts", () => {
    expect(() => trainingStepEstimate(tiny, { sequences: -1, seqLen: 3, kernels: "tfjs" })).toThrow(/sequences must be a finite number ≥ 0/);
    expect(() => generationEstimate(tiny, { rows: Number.NaN, prompts: 1, promptLen: 2, maxNewTokens: 1, kernels: "tfjs" })).toThrow(/rows/);
  });

  it("SmolLM2-135M's shape at 4 × 128 needs more than a 4 GB heap on either kernel family", () => {
    expect(trainingStepEstimate(smol, { sequences: 4, seqLen: 128, kernels: "tfjs" }).tensorBytes / 2 ** 30).toBeGreaterThan(8);
    expect(trainingStepEstimate(smol, { sequences: 4, seqLen: 128, kernels: "fused" }).tensorBytes / 2 ** 30).toBeGreaterThan(4.5);
    // One sequence fits with the fused kernels (measured: a 3.03 GB heap).
    expect(trainingStepEstimate(smol, { sequences: 1, seqLen: 128, kernels: "fused" }).tensorBytes / 2 ** 30).toBeLessThan(3.7);
  });
});

describe("generation", () => {
  it("tfjs ops: transposed copies, the prompt's forward pass, both copies of the KV cache, logits", () => {
    const e = generationEstimate(tiny, { rows: 3, prompts: 3, promptLen: 2, maxNewTokens: 4, kernels: "tfjs" });
    const forward = 4 * 3 * 2 * 2 * (23 * 4 + 12 * 2 + 5.2 * 6 + 4.4 * 2 * 2 + 900);
    // KV: 2 (k, v) × 2 layers × 3 rows × 1 head × 2 dims × 4 bytes = 96 per position, 6 positions, twice.
    expect(e.items.map((i) => [i.label, i.pool])).toEqual([
      ["transposed weight copies for decoding", "tensors"],
      ["forward pass over 3 rows × 2 tokens", "tensors"],
      ["KV cache (3 rows × 6 positions), old and new copy during a step", "tensors"],
      ["logits (3 rows × 10 tokens)", "tensors"],
      ["logits read back to JavaScript, host memory", "host"],
    ]);
    expect(e.tensorBytes).toBeCloseTo((120 * 2 + 40) * 4 + forward + 2 * 96 * 6 + 2 * 3 * 10 * 4, 6);
    expect(e.hostBytes).toBe(120);
  });

  it("native decoding keeps the KV cache in host memory, only the prompt's on the heap", () => {
    const e = generationEstimate(tiny, { rows: 3, prompts: 3, promptLen: 2, maxNewTokens: 4, kernels: "fused", nativeDecode: true });
    const forward = 4 * 3 * 2 * 2 * (13 * 4 + 7.5 * 2 + 3.2 * 6 + 0.5 * 2 * 2 + 100);
    expect(e.tensorBytes).toBeCloseTo(forward + 96 * 2 + 240, 6);
    expect(e.hostBytes).toBe(96 * 6 + 120);
  });

  it("shared prompts: one prompt pass per prompt, its keys and values copied to its rows", () => {
    const e = generationEstimate(tiny, { rows: 3, prompts: 1, promptLen: 2, maxNewTokens: 4, kernels: "fused", nativeDecode: true });
    // One row × 2 tokens × 2 layers; the prompt's K/V (32 bytes a row and position) for 1 + 3 rows × 2 positions.
    const forward = 4 * 1 * 2 * 2 * (13 * 4 + 7.5 * 2 + 3.2 * 6 + 0.5 * 2 * 2 + 100);
    expect(e.items.map((i) => i.label)).toContain("forward pass over 1 rows × 2 tokens");
    expect(e.tensorBytes).toBeCloseTo(forward + 32 * 2 * 4 + 240, 6);
    expect(e.hostBytes).toBe(96 * 6 + 120);
    // Without a cache every step reruns every row.
    expect(
      generationEstimate(tiny, { rows: 3, prompts: 1, promptLen: 2, maxNewTokens: 4, kernels: "tfjs", useCache: false }).items.map((i) => i.label),
    ).toContain("forward pass over 3 rows × 5 tokens");
    expect(() => generationEstimate(tiny, { rows: 2, prompts: 3, promptLen: 2, maxNewTokens: 1, kernels: "tfjs" })).toThrow(/3 prompts for 2 rows/);
  });

  it("libtorch's decoder: each prompt's keys and values twice (the prompt pass's and its own), each row's only for the new tokens", () => {
    const e = generationEstimate(tiny, { rows: 3, prompts: 1, promptLen: 2, maxNewTokens: 4, kernels: "aten" });
    const labels = e.items.map((i) => i.label);
    expect(labels).toContain("KV cache of the prompts (1 rows × 2 positions, the prompt pass's and the decoder's copy)");
    expect(labels).toContain("KV cache of the new tokens (3 rows × 4 positions)");
    // 32 bytes a row and position (K and V × 2 layers × 1 KV head × 2 dims × 4 bytes): 2 × 1 × 2 positions, then 3 rows × 4.
    const kv = e.items.filter((i) => i.label.startsWith("KV cache")).reduce((sum, i) => sum + i.bytes, 0);
    expect(kv).toBe(32 * 2 * 2 + 32 * 3 * 4);
    // A family the decoder does not run grows its cache with tfjs ops: old and new copy of every row's.
    const gemma = generationEstimate(
      { ...tiny, arch: { ...tiny.arch, qkNorm: true } },
      { rows: 3, prompts: 1, promptLen: 2, maxNewTokens: 4, kernels: "aten" },
    );
    expect(gemma.items.map((i) => i.label)).toContain("KV cache (3 rows × 6 positions), old and new copy during a step");
  });

  it("without a cache, the last step's forward pass over every row's whole sequence", () => {
    const e = generationEstimate(tiny, { rows: 3, prompts: 3, promptLen: 2, maxNewTokens: 4, kernels: "tfjs", useCache: false });
    expect(e.items.map((i) => i.label)).toContain("forward pass over 3 rows × 5 tokens");
    expect(e.tensorBytes).toBeCloseTo(1120 + 4 * 3 * 5 * 2 * (92 + 24 + 31.2 + 4.4 * 2 * 5 + 900) + 240, 6);
  });
});

describe("scoring", () => {
  it("the larger of its two phases: the layers or the logits", () => {
    const layers = forwardEstimate(tiny, { sequences: 2, seqLen: 3, logitRows: 4, kernels: "tfjs" });
    expect(layers.items).toEqual([
      { label: "forward pass over 2 sequences × 3 tokens", bytes: expect.closeTo(4 * 6 * 2 * (92 + 24 + 31.2 + 26.4 + 900), 6) as number, pool: "tensors" },
    ]);
    const logits = forwardEstimate(tiny, { sequences: 2, seqLen: 3, logitRows: 4000, kernels: "tfjs" });
    expect(logits.items[0]!.label).toBe("logits of 4000 positions × 10 tokens and their log-softmax");
    expect(logits.tensorBytes).toBeCloseTo(4 * (3.1 * 4000 * 10 + 6 * 4), 6);
  });

  it("sums estimates item by item", () => {
    const a = weightsEstimate(tiny);
    const b = generationEstimate(tiny, { rows: 1, prompts: 1, promptLen: 1, maxNewTokens: 1, kernels: "fused", nativeDecode: true });
    const s = sumEstimates([a, b]);
    expect(s.tensorBytes).toBeCloseTo(a.tensorBytes + b.tensorBytes, 6);
    expect(s.hostBytes).toBe(b.hostBytes);
    expect(s.items.length).toBe(a.items.length + b.items.length);
  });
});

describe("families beyond Llama", () => {
  const base = {
    vocab_size: 2000,
    hidden_size: 256,
    intermediate_size: 688,
    num_hidden_layers: 4,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 512,
    tie_word_embeddings: false,
    rope_parameters: { rope_type: "default", rope_theta: 10000 },
  };
  const llama = parseModelConfig({ ...base, model_type: "llama" });
  const w = { sequences: 4, seqLen: 64 };

  it("each departure from Llama adds activations: wide heads, q/k norms, Gemma's norms and GELU, Phi-3's splits and partial rotary", () => {
    const act = (raw: Record<string, unknown>, kernels: "tfjs" | "fused") => trainingActivationBytes(parseModelConfig({ ...base, ...raw }), { ...w, kernels });
    for (const kernels of ["tfjs", "fused"] as const) {
      const plain = trainingActivationBytes(llama, { ...w, kernels });
      // Qwen3 at head_dim 128: q is 512 wide on a 256 hidden size, and normed per head.
      expect(act({ model_type: "qwen3", head_dim: 128 }, kernels)).toBeGreaterThan(plain);
      expect(act({ model_type: "phi3", rope_parameters: { rope_type: "default", rope_theta: 10000, partial_rotary_factor: 0.75 } }, kernels)).toBeGreaterThan(
        act({ model_type: "phi3" }, kernels),
      );
      expect(act({ model_type: "phi3" }, kernels)).toBeGreaterThan(plain);
      const gemma = {
        model_type: "gemma3_text",
        head_dim: 64,
        sliding_window: 512,
        rope_parameters: { full_attention: { rope_type: "default" }, sliding_attention: { rope_type: "default" } },
      };
      expect(act(gemma, kernels)).toBeGreaterThan(plain);
      expect(act({ ...gemma, final_logit_softcapping: 30 }, kernels) - act(gemma, kernels)).toBeCloseTo(4 * 3 * 4 * 63 * 2000, 0);
    }
  });

  it("on the fused kernels, a window shorter than the sequence costs tfjs attention scores; wasm keeps them anyway", () => {
    const mistral = (window: number) => parseModelConfig({ ...base, model_type: "mistral", sliding_window: window });
    expect(trainingActivationBytes(mistral(512), { ...w, kernels: "fused" })).toBe(trainingActivationBytes(llama, { ...w, kernels: "fused" }));
    // (7.2 + 2 − 1.2) floats more per score: 256 tokens × 4 layers × 4 heads × 64 keys.
    expect(trainingActivationBytes(mistral(16), { ...w, kernels: "fused" }) - trainingActivationBytes(llama, { ...w, kernels: "fused" })).toBeCloseTo(
      4 * 8 * 256 * 4 * 4 * 64,
      0,
    );
    expect(trainingActivationBytes(mistral(16), { ...w, kernels: "tfjs" })).toBe(trainingActivationBytes(llama, { ...w, kernels: "tfjs" }));
  });

  it("generation: no native decoding for families the decoders cannot run; Phi-3 recomputes its sequence at the longrope switch", () => {
    const qwen3 = parseModelConfig({ ...base, model_type: "qwen3", head_dim: 64 });
    const g = generationEstimate(qwen3, { rows: 2, prompts: 2, promptLen: 8, maxNewTokens: 8, kernels: "fused", nativeDecode: true });
    expect(g.hostBytes).toBe(2 * 2000 * 4);
    expect(g.items.map((i) => i.label)).toContain("KV cache (2 rows × 16 positions), old and new copy during a step");
    const longrope = { rope_type: "longrope", rope_theta: 10000, short_factor: Array(32).fill(1), long_factor: Array(32).fill(4) };
    const phi3 = parseModelConfig({
      ...base,
      model_type: "phi3",
      max_position_embeddings: 512,
      original_max_position_embeddings: 32,
      rope_parameters: longrope,
    });
    expect(generationEstimate(phi3, { rows: 2, prompts: 2, promptLen: 8, maxNewTokens: 40, kernels: "tfjs" }).items.map((i) => i.label)).toContain(
      "forward pass over 2 rows × 33 tokens",
    );
    expect(generationEstimate(phi3, { rows: 2, prompts: 2, promptLen: 8, maxNewTokens: 20, kernels: "tfjs" }).items.map((i) => i.label)).toContain(
      "forward pass over 2 rows × 8 tokens",
    );
  });
});

// The memory estimates against numbers worked out by hand from their formulas (docs/memory.md),
// on a model small enough to count every parameter.
import { describe, expect, it } from "vitest";
import { forwardEstimate, generationEstimate, llamaConfigJson, modelSizes, parseModelConfig, sumEstimates, trainingActivationBytes, trainingStepEstimate, weightsEstimate } from "../src/index.js";

// vocab 10, hidden 4, intermediate 6, 2 layers, 2 heads of dim 2, 1 key/value head, untied.
const tiny = parseModelConfig(llamaConfigJson({ vocabSize: 10, hiddenSize: 4, intermediateSize: 6, numLayers: 2, numHeads: 2, numKvHeads: 1, tieWordEmbeddings: false }));
// SmolLM2-135M's shape.
const smol = parseModelConfig(llamaConfigJson({ vocabSize: 49152, hiddenSize: 576, intermediateSize: 1536, numLayers: 30, numHeads: 9, numKvHeads: 3, tieWordEmbeddings: true }));

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

  it("counts every scored position's logits when told how many", () => {
    const all = trainingActivationBytes(tiny, { ...w, kernels: "fused" });
    const one = trainingActivationBytes(tiny, { ...w, scoredTokens: 1, kernels: "fused" });
    expect(all - one).toBeCloseTo(4 * 1.5 * 3 * 10, 6);
  });

  it("rejects impossible counts", () => {
    expect(() => trainingStepEstimate(tiny, { sequences: -1, seqLen: 3, kernels: "tfjs" })).toThrow(/sequences must be a finite number ≥ 0/);
    expect(() => generationEstimate(tiny, { rows: Number.NaN, promptLen: 2, maxNewTokens: 1, kernels: "tfjs" })).toThrow(/rows/);
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
    const e = generationEstimate(tiny, { rows: 3, promptLen: 2, maxNewTokens: 4, kernels: "tfjs" });
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
    const e = generationEstimate(tiny, { rows: 3, promptLen: 2, maxNewTokens: 4, kernels: "fused", nativeDecode: true });
    const forward = 4 * 3 * 2 * 2 * (13 * 4 + 7.5 * 2 + 3.2 * 6 + 0.5 * 2 * 2 + 100);
    expect(e.tensorBytes).toBeCloseTo(forward + 96 * 2 + 240, 6);
    expect(e.hostBytes).toBe(96 * 6 + 120);
  });

  it("without a cache, the last step's forward pass over every row's whole sequence", () => {
    const e = generationEstimate(tiny, { rows: 3, promptLen: 2, maxNewTokens: 4, kernels: "tfjs", useCache: false });
    expect(e.items.map((i) => i.label)).toContain("forward pass over 3 rows × 5 tokens");
    expect(e.tensorBytes).toBeCloseTo(1120 + 4 * 3 * 5 * 2 * (92 + 24 + 31.2 + 4.4 * 2 * 5 + 900) + 240, 6);
  });
});

describe("scoring", () => {
  it("the larger of its two phases: the layers or the logits", () => {
    const layers = forwardEstimate(tiny, { sequences: 2, seqLen: 3, logitRows: 4, kernels: "tfjs" });
    expect(layers.items).toEqual([{ label: "forward pass over 2 sequences × 3 tokens", bytes: expect.closeTo(4 * 6 * 2 * (92 + 24 + 31.2 + 26.4 + 900), 6) as number, pool: "tensors" }]);
    const logits = forwardEstimate(tiny, { sequences: 2, seqLen: 3, logitRows: 4000, kernels: "tfjs" });
    expect(logits.items[0]!.label).toBe("logits of 4000 positions × 10 tokens and their log-softmax");
    expect(logits.tensorBytes).toBeCloseTo(4 * (3.1 * 4000 * 10 + 6 * 4), 6);
  });

  it("sums estimates item by item", () => {
    const a = weightsEstimate(tiny);
    const b = generationEstimate(tiny, { rows: 1, promptLen: 1, maxNewTokens: 1, kernels: "fused", nativeDecode: true });
    const s = sumEstimates([a, b]);
    expect(s.tensorBytes).toBeCloseTo(a.tensorBytes + b.tensorBytes, 6);
    expect(s.hostBytes).toBe(b.hostBytes);
    expect(s.items.length).toBe(a.items.length + b.items.length);
  });
});

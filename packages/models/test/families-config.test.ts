// config.json of the families beyond Llama/Qwen2: what each is parsed into (the fixtures' real
// configs), transformers' defaults for absent fields, and a clear error naming the field for every
// feature of a supported family that pbrl does not implement.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { fusedDecodeSupport, parseModelConfig } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const configOf = (name: string) => JSON.parse(readFileSync(path.join(FIXTURES, name, "config.json"), "utf8")) as Record<string, unknown>;
const parse = (name: string, patch: Record<string, unknown> = {}) => parseModelConfig({ ...configOf(name), ...patch }, "x/config.json");

describe("each family's config", () => {
  it("qwen3: q/k norms, head_dim independent of hidden/heads, tied, no biases", () => {
    const c = parse("tiny-qwen3");
    expect(c).toMatchObject({
      modelType: "qwen3",
      headDim: 32,
      hiddenSize: 64,
      numHeads: 4,
      numKvHeads: 2,
      tieWordEmbeddings: true,
      qkvBias: false,
      oBias: false,
      rotaryDim: 32,
    });
    expect(c.arch).toMatchObject({ qkNorm: true, sandwichNorms: false, normPlusOne: false, fusedProjections: false, activation: "silu" });
    expect(c.layers).toEqual([
      { window: undefined, rope: "global" },
      { window: undefined, rope: "global" },
    ]);
    // Qwen3Config's head_dim default is 128, not hidden_size / num_attention_heads.
    expect(parse("tiny-qwen3", { head_dim: undefined }).headDim).toBe(128);
    // attention_bias puts a bias on all four projections, o_proj included (unlike Qwen2).
    expect(parse("tiny-qwen3", { attention_bias: true })).toMatchObject({ qkvBias: true, oBias: true });
  });

  it("qwen2/qwen3 sliding layers: from max_window_layers on, only with use_sliding_window", () => {
    const c = parse("tiny-qwen3", { use_sliding_window: true, sliding_window: 5, max_window_layers: 1, layer_types: undefined });
    expect(c.layers.map((l) => l.window)).toEqual([undefined, 5]);
    expect(
      parse("tiny-qwen2", { use_sliding_window: true, sliding_window: 7, layer_types: ["sliding_attention", "full_attention"] }).layers.map((l) => l.window),
    ).toEqual([7, undefined]);
  });

  it("mistral: every layer slides over sliding_window (4096 when absent, none when null)", () => {
    expect(parse("tiny-mistral").layers.map((l) => l.window)).toEqual([8, 8]);
    expect(parse("tiny-mistral", { sliding_window: undefined }).layers[0]!.window).toBe(4096);
    expect(parse("tiny-mistral", { sliding_window: null }).layers[0]!.window).toBeUndefined();
    expect(parse("tiny-mistral")).toMatchObject({ qkvBias: false, oBias: false, mlpBias: false, tieWordEmbeddings: false });
  });

  it("gemma3_text: (1 + w) norms, sandwich norms, GeGLU, embedding scale in float32, query_pre_attn_scalar, local and global layers", () => {
    const c = parse("tiny-gemma3");
    expect(c.arch).toEqual({
      activation: "gelu_pytorch_tanh",
      normPlusOne: true,
      qkNorm: true,
      sandwichNorms: true,
      fusedProjections: false,
      embedScale: Math.fround(Math.sqrt(48)),
      attentionScale: 1 / Math.sqrt(24),
      finalLogitSoftcap: 15,
    });
    expect(c.arch.embedScale).not.toBe(Math.sqrt(48));
    expect(c.layers).toEqual([
      { window: 6, rope: "local" },
      { window: undefined, rope: "global" },
    ]);
    expect({ theta: c.ropeTheta, scaling: c.ropeScaling }).toEqual({ theta: 1e6, scaling: { type: "linear", factor: 8 } });
    expect(c.localRope).toEqual({ theta: 1e4, scaling: { type: "default" } });
    // Gemma3TextConfig ties embeddings unless told otherwise, and heads are 256 wide by default.
    expect(parse("tiny-gemma3", { tie_word_embeddings: undefined }).tieWordEmbeddings).toBe(true);
    expect(parse("tiny-gemma3", { head_dim: undefined }).headDim).toBe(256);
  });

  it("gemma3_text: transformers 4 rope fields, and the default layer pattern (every 6th layer global)", () => {
    const c = parse("tiny-gemma3", {
      rope_parameters: undefined,
      rope_theta: 500000,
      rope_local_base_freq: 20000,
      rope_scaling: { rope_type: "linear", factor: 4 },
      layer_types: undefined,
      num_hidden_layers: 7,
      sliding_window_pattern: 6,
    });
    expect({ theta: c.ropeTheta, scaling: c.ropeScaling }).toEqual({ theta: 500000, scaling: { type: "linear", factor: 4 } });
    expect(c.localRope).toEqual({ theta: 20000, scaling: { type: "default" } });
    expect(c.layers.map((l) => l.window ?? 0)).toEqual([6, 6, 6, 6, 6, 0, 6]);
  });

  it("phi3: fused projections, partial rotary, longrope with its attention factor, original_max_position_embeddings from the top level", () => {
    const c = parse("tiny-phi3");
    expect(c.arch).toMatchObject({ fusedProjections: true, qkNorm: false, activation: "silu" });
    expect(c.rotaryDim).toBe(12);
    expect(c.layers.every((l) => l.window === 10)).toBe(true);
    const s = c.ropeScaling;
    expect(s.type).toBe("longrope");
    if (s.type !== "longrope") return;
    expect(s.shortFactor).toHaveLength(6);
    expect(s.longFactor).toHaveLength(6);
    expect(s.originalMaxPositionEmbeddings).toBe(16);
    // factor = max_position_embeddings / original = 4: √(1 + ln 4 / ln 16) = √1.5.
    expect(s.attentionFactor).toBeCloseTo(Math.sqrt(1.5), 12);
    // Phi-3's first long-context configs name the type "su".
    const rope = configOf("tiny-phi3")["rope_parameters"] as Record<string, unknown>;
    expect(parse("tiny-phi3", { rope_parameters: { ...rope, rope_type: "su" } }).ropeScaling.type).toBe("longrope");
  });

  it("the fused decoders take llama, qwen2 and mistral (its window through the key mask), not the others", () => {
    expect(fusedDecodeSupport(parse("tiny-llama"))).toEqual({ ok: true, window: undefined });
    expect(fusedDecodeSupport(parse("tiny-qwen2"))).toEqual({ ok: true, window: undefined });
    expect(fusedDecodeSupport(parse("tiny-mistral"))).toEqual({ ok: true, window: 8 });
    expect(fusedDecodeSupport(parse("tiny-qwen3"))).toEqual({ ok: false, reason: "q/k norms" });
    expect(fusedDecodeSupport(parse("tiny-gemma3"))).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^q\/k norms, .*, gelu_pytorch_tanh activation, .*layers with different attention windows$/) as string,
    });
    expect(fusedDecodeSupport(parse("tiny-phi3"))).toEqual({ ok: false, reason: "fused qkv_proj/gate_up_proj weights, partial rotary embeddings" });
    // A Qwen2 whose layers slide differently cannot share one key mask.
    expect(fusedDecodeSupport(parse("tiny-qwen2", { use_sliding_window: true, sliding_window: 4, max_window_layers: 1, layer_types: undefined }))).toEqual({
      ok: false,
      reason: "layers with different attention windows",
    });
  });
});

describe("unsupported features of supported families fail clearly, naming the field and the fix", () => {
  const phi3Rope = () => configOf("tiny-phi3")["rope_parameters"] as Record<string, unknown>;
  it.each<[string, string, Record<string, unknown>, RegExp]>([
    [
      "mistral",
      "an unknown rope type",
      { rope_parameters: { rope_type: "dynamic", factor: 2, rope_theta: 10000 } },
      /rope_parameters\.rope_type "dynamic" is not supported; pbrl implements default, linear, llama3 and longrope\. Use a checkpoint with one of those, or remove rope_parameters/,
    ],
    [
      "tiny-phi3",
      "longrope without long_factor",
      { rope_parameters: { ...phi3Rope(), long_factor: undefined } },
      /rope_type longrope\): missing required field "long_factor"; set long_factor to the 6 factors the model was trained with/,
    ],
    [
      "tiny-phi3",
      "longrope factors of the wrong length",
      { rope_parameters: { ...phi3Rope(), short_factor: [1, 1] } },
      /field "short_factor" must be a list of 6 finite numbers > 0, got \[1,1\]/,
    ],
    ["tiny-phi3", "residual dropout", { resid_pdrop: 0.1 }, /resid_pdrop=0\.1 is not supported; pbrl trains without dropout \(set it to 0\.0\)/],
    [
      "tiny-phi3",
      "a partial rotary factor leaving fewer than two rotated dimensions",
      { rope_parameters: { ...phi3Rope(), partial_rotary_factor: 0.1 } },
      /partial_rotary_factor=0\.1 must be in \(0, 1\] and leave an even number of rotated dimensions/,
    ],
    [
      "tiny-qwen3",
      "a partial rotary factor where transformers rotates the whole head",
      { partial_rotary_factor: 0.5 },
      /partial_rotary_factor=0\.5 is not supported for qwen3 \(transformers rotates the whole head there\); remove it or set it to 1\.0/,
    ],
    [
      "tiny-gemma3",
      "an unknown attention type",
      { layer_types: ["sliding_attention", "chunked_attention"] },
      /layer_types\[1\] "chunked_attention" is not supported; pbrl implements "full_attention" and "sliding_attention" layers/,
    ],
    ["tiny-gemma3", "layer_types of the wrong length", { layer_types: ["full_attention"] }, /layer_types must list one entry per layer \(2\)/],
    [
      "tiny-gemma3",
      "another activation",
      { hidden_activation: "gelu" },
      /hidden_activation "gelu" is not supported for gemma3_text; pbrl implements "gelu_pytorch_tanh"/,
    ],
    [
      "tiny-gemma3",
      "bidirectional attention",
      { use_bidirectional_attention: true },
      /use_bidirectional_attention=true .* is not supported; pbrl implements causal language models, set it to false/,
    ],
    [
      "tiny-gemma3",
      "flat rope_parameters",
      { rope_parameters: { rope_type: "default", rope_theta: 10000 } },
      /gemma3_text's rope_parameters must hold one entry per layer type/,
    ],
    [
      "tiny-gemma3",
      "a sliding layer without a window",
      { sliding_window: null },
      /layer_types\[0\] is "sliding_attention" but no sliding_window is in effect; set sliding_window/,
    ],
    ["tiny-gemma3", "a non-positive soft-cap", { final_logit_softcapping: 0 }, /field "final_logit_softcapping" must be a finite number > 0, got 0/],
    ["tiny-qwen3", "another activation", { hidden_act: "gelu" }, /hidden_act "gelu" is not supported for qwen3; pbrl implements "silu"/],
    [
      "tiny-llama",
      "sliding layers",
      { layer_types: ["sliding_attention", "full_attention"] },
      /layer_types include sliding layers, which Llama does not have; use model_type "mistral"/,
    ],
    [
      "tiny-gemma3",
      "the multimodal Gemma 3 wrapper",
      { model_type: "gemma3" },
      /model_type "gemma3" is not supported; .*use its text-only counterpart \(model_type "gemma3_text"/,
    ],
  ])("%s: %s", (name, _what, patch, message) => {
    const fixture = name.startsWith("tiny-") ? name : `tiny-${name}`;
    expect(() => parse(fixture, patch)).toThrow(message);
  });
});

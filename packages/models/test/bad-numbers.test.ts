// A checkpoint whose numbers cannot make a working model — a config number out of range, or
// weights holding NaN or ±Infinity in any storage dtype — is refused at load time with an error
// naming the file, the field or tensor and the value, before it can generate garbage.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readSafetensors, RngStream, tf, writeSafetensors, type SafetensorsWriteDtype, type TensorToWrite } from "@pbrl/core-tensor";
import { countNonFinite, loadPretrained, ModelConfigError, parseModelConfig, ScalarHead, WeightLoadError } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const llamaConfig = () => JSON.parse(readFileSync(path.join(FIXTURES, "tiny-llama", "config.json"), "utf8")) as Record<string, unknown>;
const copyFixture = (name: string): string => {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-bad-numbers-")), name);
  cpSync(path.join(FIXTURES, name), dir, { recursive: true });
  return dir;
};

describe("config numbers", () => {
  const where = "ckpt/config.json";
  it.each<[string, Record<string, unknown>, RegExp]>([
    [
      "rms_norm_eps 0",
      { rms_norm_eps: 0 },
      /^ckpt\/config\.json: field "rms_norm_eps" must be a finite number > 0, got 0: RMSNorm divides by .*eps ≤ 0 turns hidden states into NaN\. Set it to the value the model was trained with \(1e-5 or 1e-6 in every supported family\)\.$/,
    ],
    ["rms_norm_eps negative", { rms_norm_eps: -1e-5 }, /field "rms_norm_eps" must be a finite number > 0, got -0\.00001/],
    ["rms_norm_eps that is 0 in float32", { rms_norm_eps: 1e-50 }, /field "rms_norm_eps" must be a finite number > 0, got 1e-50/],
    ["rms_norm_eps Infinity (1e999 in JSON)", { rms_norm_eps: Infinity }, /field "rms_norm_eps" must be a finite number > 0, got Infinity/],
    ["rms_norm_eps a string", { rms_norm_eps: "1e-5" }, /field "rms_norm_eps" must be a finite number > 0, got "1e-5"/],
    [
      "rope_theta 0",
      { rope_parameters: { rope_type: "default", rope_theta: 0 } },
      /^ckpt\/config\.json rope_parameters: field "rope_theta" must be a finite number > 0, got 0: it is the base of the rotary frequencies.*\(commonly 10000/,
    ],
    [
      "rope_theta -Infinity",
      { rope_parameters: { rope_type: "default", rope_theta: -Infinity } },
      /field "rope_theta" must be a finite number > 0, got -Infinity/,
    ],
    [
      "top-level rope_theta negative",
      { rope_parameters: undefined, rope_theta: -10000 },
      /^ckpt\/config\.json: field "rope_theta" must be a finite number > 0, got -10000/,
    ],
    ["rope_parameters not an object", { rope_parameters: "default" }, /field "rope_parameters" must be an object, got "default"/],
    [
      "linear rope factor Infinity",
      { rope_parameters: { rope_type: "linear", factor: Infinity, rope_theta: 10000 } },
      /rope linear scaling: field "factor" must be a finite number > 0, got Infinity/,
    ],
    [
      "llama3 high_freq_factor ≤ low",
      {
        rope_parameters: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 4,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
          rope_theta: 500000,
        },
      },
      /rope llama3: high_freq_factor \(4\) must be greater than low_freq_factor \(4\)/,
    ],
    [
      "llama3 low_freq_factor 0",
      {
        rope_parameters: {
          rope_type: "llama3",
          factor: 8,
          low_freq_factor: 0,
          high_freq_factor: 4,
          original_max_position_embeddings: 8192,
          rope_theta: 500000,
        },
      },
      /rope llama3: field "low_freq_factor" must be a finite number > 0, got 0/,
    ],
    ["hidden_size 0", { hidden_size: 0 }, /field "hidden_size" must be a positive integer, got 0/],
    ["hidden_size fractional", { hidden_size: 64.5 }, /field "hidden_size" must be a positive integer, got 64\.5/],
    ["hidden_size beyond 2^53", { hidden_size: 2 ** 60 }, /field "hidden_size" must be a positive integer, got 1152921504606847000/],
    ["vocab_size negative", { vocab_size: -384 }, /field "vocab_size" must be a positive integer, got -384/],
    ["num_hidden_layers Infinity", { num_hidden_layers: Infinity }, /field "num_hidden_layers" must be a finite number, got Infinity/],
    ["max_position_embeddings 0", { max_position_embeddings: 0 }, /field "max_position_embeddings" must be a positive integer, got 0/],
    [
      "hidden_size not a multiple of the heads, no head_dim",
      { hidden_size: 66, head_dim: undefined },
      /hidden_size \(66\) is not a multiple of num_attention_heads \(4\) and head_dim is not set/,
    ],
  ])("%s", (_name, patch, message) => {
    let err: unknown;
    try {
      parseModelConfig({ ...llamaConfig(), ...patch }, where);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ModelConfigError);
    expect((err as Error).message).toMatch(message);
  });

  it.each([[null], [[]], [3]])("a config.json that is %j rather than an object", (raw) => {
    expect(() => parseModelConfig(raw as unknown as Record<string, unknown>, where)).toThrow(
      /^ckpt\/config\.json: must be a JSON object of model settings, got /,
    );
  });

  it("loadPretrained names the config file before reading any weight", async () => {
    const dir = copyFixture("tiny-llama");
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ ...llamaConfig(), rms_norm_eps: 0 }));
    writeFileSync(path.join(dir, "model.safetensors"), "not read");
    const err = await loadPretrained(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelConfigError);
    expect((err as Error).message).toContain(`${path.join(dir, "config.json")}: field "rms_norm_eps" must be a finite number > 0, got 0`);
  });
});

describe("non-finite weights", () => {
  /** Rewrites `dir`'s weights in `dtype` after `edit` changed one tensor's values. */
  async function rewriteWeights(dir: string, dtype: SafetensorsWriteDtype, edit: (name: string, data: Float32Array) => void): Promise<void> {
    const file = path.join(dir, "model.safetensors");
    const loaded = await readSafetensors(file);
    const out = new Map<string, TensorToWrite>();
    for (const [name, t] of loaded.tensors) {
      if (t.tensor.dtype === "float32") edit(name, t.tensor.data);
      out.set(name, { tensor: t.tensor, dtype });
    }
    await writeSafetensors(file, out, loaded.metadata);
  }

  it.each<[string, string, SafetensorsWriteDtype, (d: Float32Array) => void, RegExp]>([
    [
      "float32 NaN",
      "tiny-llama",
      "F32",
      (d) => d.fill(NaN, 10, 13),
      /weight "model\.layers\.1\.mlp\.down_proj\.weight" holds 3 non-finite values \(NaN or ±Infinity\) of 10240, the first at index 10 \(NaN\)/,
    ],
    [
      "bfloat16 NaN",
      "tiny-llama-bf16",
      "BF16",
      (d) => (d[7] = NaN),
      /weight "model\.layers\.1\.mlp\.down_proj\.weight" holds 1 non-finite value \(NaN or ±Infinity\) of 10240, the first at index 7 \(NaN\)/,
    ],
    [
      "float16 overflow to Infinity",
      "tiny-llama",
      "F16",
      (d) => (d[100] = -1e6),
      /weight "model\.layers\.1\.mlp\.down_proj\.weight" holds 1 non-finite value \(NaN or ±Infinity\) of 10240, the first at index 100 \(-Infinity\)/,
    ],
  ])("%s is refused, naming the tensor and the count", async (_name, fixture, dtype, spoil, message) => {
    const dir = copyFixture(fixture);
    await rewriteWeights(dir, dtype, (name, data) => {
      if (name === "model.layers.1.mlp.down_proj.weight") spoil(data);
    });
    const tensors = tf.memory().numTensors;
    const err = await loadPretrained(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WeightLoadError);
    expect((err as Error).message).toMatch(new RegExp(`^${dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: ` + message.source));
    expect((err as Error).message).toMatch(/re-download or re-export it, or load an earlier checkpoint\.$/);
    // The weights uploaded before the bad one are released.
    expect(tf.memory().numTensors).toBe(tensors);
  });

  it("the untouched checkpoint still loads", async () => {
    const dir = copyFixture("tiny-llama");
    await rewriteWeights(dir, "F32", () => {});
    const p = await loadPretrained(dir);
    p.model.dispose();
  });

  it("a saved head with a NaN weight is refused", async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-bad-head-")), "head.safetensors");
    const head = ScalarHead.init({ hiddenSize: 4, bias: true }, RngStream.fromSeed(0));
    await head.save(file);
    head.dispose();
    const loaded = await readSafetensors(file);
    loaded.tensors.get("score.bias")!.tensor.data[0] = Infinity;
    await writeSafetensors(file, new Map([...loaded.tensors].map(([k, t]) => [k, { tensor: t.tensor, dtype: "F32" as const }])), loaded.metadata);
    await expect(ScalarHead.load(file)).rejects.toThrow(WeightLoadError);
    await expect(ScalarHead.load(file)).rejects.toThrow(
      /weight "score\.bias" holds 1 non-finite value \(NaN or ±Infinity\) of 1, the first at index 0 \(Infinity\)/,
    );
  });

  it("countNonFinite counts NaN and ±Infinity only", () => {
    expect(countNonFinite(Float32Array.from([0, -0, 3.4e38, -3.4e38, 1e-45]))).toEqual({ count: 0, first: -1 });
    expect(countNonFinite(Float32Array.from([1, NaN, 2, Infinity, -Infinity]))).toEqual({ count: 3, first: 1 });
    expect(countNonFinite(new Float32Array(0))).toEqual({ count: 0, first: -1 });
  });
});

import { cpSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPretrained, parseModelConfig, savePretrained } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-ckpt-"));
const llamaConfig = () => JSON.parse(readFileSync(path.join(FIXTURES, "tiny-llama", "config.json"), "utf8")) as Record<string, unknown>;

describe("checkpoint save and reload", () => {
  it.each(["tiny-llama", "tiny-qwen2"])("%s reloads bit-identically, with every file transformers needs", async (name) => {
    const src = await loadPretrained(path.join(FIXTURES, name));
    const out = path.join(tmp(), "saved");
    await savePretrained(out, src);
    const files = readdirSync(out).sort();
    expect(files).toEqual(expect.arrayContaining(["config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]));
    const back = await loadPretrained(out);
    const a = src.model.hostWeights();
    for (const [k, t] of back.model.hostWeights()) expect(Buffer.from(t.data.buffer).equals(Buffer.from(a.get(k)!.data.buffer)), k).toBe(true);
    expect(back.model.numParameters()).toBe(src.model.numParameters());
    // the tokenizer files are copied verbatim
    for (const f of ["tokenizer.json", "tokenizer_config.json"])
      expect(readFileSync(path.join(out, f), "utf8")).toBe(readFileSync(path.join(FIXTURES, name, f), "utf8"));
    // tied embeddings are not written twice
    const header = readFileSync(path.join(out, "model.safetensors"));
    expect(header.includes("lm_head.weight")).toBe(name === "tiny-qwen2");
    src.model.dispose();
    back.model.dispose();
  });

  it("writes bfloat16 and sharded checkpoints that reload", async () => {
    const src = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
    const dir = tmp();
    await savePretrained(path.join(dir, "bf16"), src, { dtype: "bfloat16" });
    expect(readFileSync(path.join(dir, "bf16", "model.safetensors")).equals(readFileSync(path.join(FIXTURES, "tiny-llama-bf16", "model.safetensors")))).toBe(
      true,
    );
    expect(JSON.parse(readFileSync(path.join(dir, "bf16", "config.json"), "utf8")).dtype).toBe("bfloat16");
    await savePretrained(path.join(dir, "sharded"), src, { maxShardBytes: 100_000 });
    expect(readdirSync(path.join(dir, "sharded")).filter((f) => /^model-\d{5}-of-\d{5}\.safetensors$/.test(f)).length).toBeGreaterThan(1);
    const back = await loadPretrained(path.join(dir, "sharded"));
    expect(back.model.numParameters()).toBe(src.model.numParameters());
    src.model.dispose();
    back.model.dispose();
  });

  it("overwrites an existing checkpoint atomically, leaving no temporaries", async () => {
    const src = await loadPretrained(path.join(FIXTURES, "tiny-qwen2"));
    const dir = tmp();
    const out = path.join(dir, "agent_0");
    await savePretrained(out, src, { maxShardBytes: 60_000 });
    await savePretrained(out, src);
    expect(readdirSync(dir)).toEqual(["agent_0"]);
    expect(readdirSync(out).some((f) => f.startsWith("model-0"))).toBe(false);
    src.model.dispose();
  });
});

describe("unsupported or broken checkpoints fail clearly", () => {
  it.each([
    [{ model_type: "gpt2" }, /model_type "gpt2" is not supported; pbrl implements llama, qwen2/],
    [{ hidden_act: "gelu" }, /hidden_act "gelu" is not supported/],
    [
      { rope_parameters: { rope_type: "yarn", factor: 4, rope_theta: 10000 } },
      /rope_parameters\.rope_type "yarn" is not supported; pbrl implements default, linear, llama3 and longrope/,
    ],
    [{ num_key_value_heads: 3 }, /num_attention_heads \(4\) must be a multiple of num_key_value_heads \(3\)/],
    [{ attention_dropout: 0.1 }, /attention_dropout=0.1 is not supported/],
    [{ quantization_config: { bits: 4 } }, /quantized checkpoints are not supported/],
    [{ hidden_size: "64" }, /field "hidden_size" must be a finite number, got "64"/],
    [{ vocab_size: undefined }, /missing required field "vocab_size"/],
  ])("config %j", (patch, message) => {
    expect(() => parseModelConfig({ ...llamaConfig(), ...patch }, "x/config.json")).toThrow(message);
  });

  it("reads transformers 4 style rope fields and llama3 scaling", () => {
    const raw = {
      ...llamaConfig(),
      rope_parameters: undefined,
      rope_theta: 500000,
      rope_scaling: { rope_type: "llama3", factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 },
    };
    const c = parseModelConfig(raw);
    expect(c.ropeTheta).toBe(500000);
    expect(c.ropeScaling).toEqual({ type: "llama3", factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 });
  });

  it("names missing and mis-shaped weights", async () => {
    const dir = path.join(tmp(), "ckpt");
    cpSync(path.join(FIXTURES, "tiny-llama"), dir, { recursive: true });
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ ...llamaConfig(), num_hidden_layers: 3 }));
    await expect(loadPretrained(dir)).rejects.toThrow(/missing: model\.layers\.2\.input_layernorm\.weight/);
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ ...llamaConfig(), intermediate_size: 100 }));
    await expect(loadPretrained(dir)).rejects.toThrow(
      /"model\.layers\.0\.mlp\.gate_proj\.weight" has float32 shape \[160,64\], expected float shape \[100,64\]/,
    );
    writeFileSync(path.join(dir, "config.json"), "{ not json");
    await expect(loadPretrained(dir)).rejects.toThrow(/config\.json is not valid JSON/);
  });
});

#!/usr/bin/env node
// A randomly initialised checkpoint of a real model's shape, for measuring whole runs (memory,
// time) at real sizes without a hub download: the bench preset's config and fast init, saved as a
// Hugging Face folder with the demo model's tokenizer (its ids fit any of these vocabularies).
//
//   pnpm build && node scripts/bench/shape_checkpoint.mjs --preset qwen2.5-0.5b --out /tmp/qwen-0.5b [--layers N --hidden H …]
//
// Presets: the bench's (smollm2-135m, qwen2.5-0.5b) and qwen2.5-1.5b (Qwen/Qwen2.5-1.5B's config).
/* global console, process */
import * as path from "node:path";
import { parseArgs } from "node:util";
import { useBackend } from "../../packages/core-tensor/dist/index.js";
import { parseModelConfig, savePretrained, Tokenizer } from "../../packages/models/dist/index.js";
import { fastRandomModel } from "../../apps/cli/dist/bench/fast-init.js";
import { presetConfigJson } from "../../apps/cli/dist/bench/presets.js";

const { values } = parseArgs({ options: { preset: { type: "string" }, out: { type: "string" } } });
if (values.out === undefined || values.preset === undefined) {
  console.error("usage: shape_checkpoint.mjs --preset smollm2-135m|qwen2.5-0.5b|qwen2.5-1.5b --out DIR");
  process.exit(2);
}

/** Qwen/Qwen2.5-1.5B's config.json (float32), as the bench presets give theirs. */
const QWEN_1_5B = {
  architectures: ["Qwen2ForCausalLM"],
  model_type: "qwen2",
  vocab_size: 151936,
  hidden_size: 1536,
  intermediate_size: 8960,
  num_hidden_layers: 28,
  num_attention_heads: 12,
  num_key_value_heads: 2,
  max_position_embeddings: 32768,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  tie_word_embeddings: true,
  hidden_act: "silu",
  bos_token_id: 151643,
  eos_token_id: 151643,
  torch_dtype: "float32",
  use_sliding_window: false,
};

const json = values.preset === "qwen2.5-1.5b" ? QWEN_1_5B : presetConfigJson(values.preset);
await useBackend("libtorch");
const config = parseModelConfig(json, `${values.preset} config`);
const model = fastRandomModel(config, 0);
const tokenizer = await Tokenizer.fromDir(path.resolve(import.meta.dirname, "../../apps/cli/assets/demo-model"));
await savePretrained(values.out, { model, tokenizer });
console.log(`wrote ${values.out}: ${model.numParameters().toLocaleString("en-US")} parameters (${values.preset} shape, random init, the demo tokenizer)`);
model.dispose();

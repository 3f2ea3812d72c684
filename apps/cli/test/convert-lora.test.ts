// `pbrl convert` with a PEFT LoRA adapter folder: written back as an adapter (PEFT's files, the
// same factors), or with --merge as a full checkpoint pbrl and transformers load with the adapter's
// logits; --merge of a full checkpoint and --out at the adapter's base are refused.
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readSafetensors } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";
import { runCli } from "./capture.js";

const BASE = path.join(MODEL_FIXTURES, "tiny-llama");
const ADAPTER = path.join(MODEL_FIXTURES, "lora", "tiny-llama");
const reference = JSON.parse(readFileSync(path.join(MODEL_FIXTURES, "lora", "tiny-llama.reference.json"), "utf8")) as {
  merged_first_prompt_logits: number[][];
  prompts: { input_ids: number[] }[];
};
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-convert-lora-"));

describe("pbrl convert with a LoRA adapter", () => {
  it("--merge writes a full checkpoint with PEFT's merged logits; without it, the adapter in PEFT's layout", async () => {
    const root = tmp();
    const merged = await runCli(["convert", "--model", ADAPTER, "--base_model", BASE, "--out", path.join(root, "merged"), "--merge"]);
    expect(merged.code, merged.err).toBe(0);
    expect(merged.err).toMatch(/with the LoRA adapter merged, float32\)/);
    expect(existsSync(path.join(root, "merged", "adapter_config.json"))).toBe(false);
    const p = await loadPretrained(path.join(root, "merged"));
    const ids = Int32Array.from(reference.prompts[0]!.input_ids);
    const logits = p.model.forward({ ids, batch: 1, length: ids.length });
    const want = reference.merged_first_prompt_logits.flat();
    const got = logits.dataSync();
    expect(Math.max(...want.map((w, i) => Math.abs(w - got[i]!)))).toBeLessThanOrEqual(1e-4);
    logits.dispose();
    p.model.dispose();

    const again = await runCli(["convert", "--model", ADAPTER, "--base_model", BASE, "--out", path.join(root, "adapter")]);
    expect(again.code, again.err).toBe(0);
    expect(again.err).toMatch(/a LoRA adapter of 8,960 parameters on 14 modules, float32/);
    expect(readdirSync(path.join(root, "adapter"))).toEqual(expect.arrayContaining(["adapter_config.json", "adapter_model.safetensors"]));
    const theirs = await readSafetensors(path.join(ADAPTER, "adapter_model.safetensors"));
    const ours = await readSafetensors(path.join(root, "adapter", "adapter_model.safetensors"));
    for (const [name, t] of theirs.tensors) expect(ours.tensors.get(name)?.tensor.data).toEqual(t.tensor.data);
  });

  it("refuses --merge of a full checkpoint, --dtype for an adapter, and --out at the adapter's base", async () => {
    const root = tmp();
    const full = await runCli(["convert", "--model", BASE, "--out", path.join(root, "x"), "--merge"]);
    expect(full.code).toBe(2);
    expect(full.err).toMatch(/--merge merges a LoRA adapter into its base model, but .* is a full checkpoint \(no adapter_config.json\); leave --merge out/);
    const dtype = await runCli(["convert", "--model", ADAPTER, "--base_model", BASE, "--out", path.join(root, "y"), "--dtype", "bfloat16"]);
    expect(dtype.code).toBe(2);
    expect(dtype.err).toMatch(/--dtype bfloat16 applies to full checkpoints; an adapter is written as PEFT writes it, in float32/);
    const base = path.join(root, "base");
    cpSync(BASE, base, { recursive: true });
    const before = readdirSync(base).map((f) => readFileSync(path.join(base, f)).toString("base64"));
    const onBase = await runCli(["convert", "--model", ADAPTER, "--base_model", base, "--out", path.join(base, "merged"), "--merge"]);
    expect(onBase.code).toBe(2);
    expect(onBase.err).toMatch(/--out .*merged is inside the source checkpoint folder .*base; pbrl convert does not write into the checkpoint it reads/);
    expect(readdirSync(base).map((f) => readFileSync(path.join(base, f)).toString("base64"))).toEqual(before);
  });
});

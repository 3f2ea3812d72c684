// LoRA adapters against Python's PEFT 0.21 on every family fixture, on each backend: adapters that
// PEFT saved (scripts/reference/make_lora_fixtures.py, factors drawn so the update matters; ranks,
// alphas, rsLoRA, rank/alpha patterns and targets differ by family) load in pbrl with PEFT's logits
// and sequence log-probs within 1e-4; pbrl's own adapters save in PEFT's layout and reload
// unchanged; and, when the fixture Python has peft, PEFT loads what pbrl saved, and transformers the
// merged checkpoint, with the same logits.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, nativeThreads, readSafetensors, tf, useBackend } from "@pbrl/core-tensor";
import { describeEachBackend } from "@pbrl/test-fixtures";
import { loadPretrained, savePretrained, scoreCompletions, type Pretrained } from "../src/index.js";
import { FIXTURES, maxAbsDiff } from "./reference.js";

const FAMILIES = ["tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-mistral", "tiny-gemma3", "tiny-phi3"];
const LORA = path.join(FIXTURES, "lora");

interface LoraReference {
  prompts: { input_ids: number[]; logits: number[][] }[];
  logprobs: { prompt_ids: number[]; completion_ids: number[]; token_logprobs: number[]; sum: number }[];
  merged_first_prompt_logits: number[][];
}
const loraReference = (family: string): LoraReference => JSON.parse(readFileSync(path.join(LORA, `${family}.reference.json`), "utf8")) as LoraReference;
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-lora-"));

const loads = { native: loadNativeAddon(), libtorch: loadLibtorchAddon(nativeThreads()) };

describeEachBackend("LoRA parity with PEFT on $backend", loads, (backend) => {
  describe.each(FAMILIES)("%s", (family) => {
    const ref = loraReference(family);
    let p: Pretrained;
    beforeAll(async () => {
      await useBackend(backend);
      p = await loadPretrained(path.join(LORA, family), { baseModel: path.join(FIXTURES, family) });
    });
    afterAll(() => p.model.dispose());

    it("loads PEFT's adapter onto its base: logits within 1e-4 for every prompt and position", () => {
      expect(p.model.adapter).toBeDefined();
      for (const prompt of ref.prompts) {
        const ids = Int32Array.from(prompt.input_ids);
        const logits = p.model.forward({ ids, batch: 1, length: ids.length });
        const diff = maxAbsDiff(logits.dataSync(), prompt.logits.flat());
        logits.dispose();
        expect(diff).toBeLessThanOrEqual(1e-4);
      }
    });

    it("sequence log-probs within 1e-4, per token and summed", () => {
      const scored = scoreCompletions(
        p.model,
        ref.logprobs.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids })),
      );
      ref.logprobs.forEach((it, i) => {
        expect(maxAbsDiff(scored.tokenLogProbs[i]!, it.token_logprobs)).toBeLessThanOrEqual(1e-4);
        expect(Math.abs(scored.sums[i]! - it.sum)).toBeLessThanOrEqual(1e-4);
      });
    });

    it("merges into a full checkpoint with PEFT's merged logits, and saves the adapter in PEFT's layout unchanged", async () => {
      const dir = tmp();
      await savePretrained(path.join(dir, "merged"), p, { merge: true });
      const merged = await loadPretrained(path.join(dir, "merged"));
      const ids = Int32Array.from(ref.prompts[0]!.input_ids);
      const logits = merged.model.forward({ ids, batch: 1, length: ids.length });
      expect(merged.model.adapter).toBeUndefined();
      expect(maxAbsDiff(logits.dataSync(), ref.merged_first_prompt_logits.flat())).toBeLessThanOrEqual(1e-4);
      logits.dispose();
      merged.model.dispose();

      await savePretrained(path.join(dir, "adapter"), p);
      expect(readdirSync(path.join(dir, "adapter")).sort()).toEqual(expect.arrayContaining(["adapter_config.json", "adapter_model.safetensors"]));
      expect(existsSync(path.join(dir, "adapter", "model.safetensors"))).toBe(false);
      const theirs = await readSafetensors(path.join(LORA, family, "adapter_model.safetensors"));
      const ours = await readSafetensors(path.join(dir, "adapter", "adapter_model.safetensors"));
      expect([...ours.tensors.keys()].sort()).toEqual([...theirs.tensors.keys()].sort());
      for (const [name, t] of theirs.tensors) expect(ours.tensors.get(name)!.tensor.data).toEqual(t.tensor.data);
    });
  });

  it("leaves no tensors behind", () => {
    expect(tf.memory().numTensors).toBe(0);
  });
});

// PEFT's side: the fixture Python (with peft) loads the adapters pbrl saved and the merged
// checkpoints with transformers alone; skipped, saying why, when there is no such Python, unless
// PBRL_REQUIRE_FIXTURE_PYTHON=1.
function findPeftPython(): { python: string } | { reason: string } {
  const candidates = [
    process.env["PBRL_FIXTURE_PYTHON"],
    process.env["PBRL_PYTHON"],
    path.resolve(import.meta.dirname, "../../../.venv-ref/bin/python"),
  ].filter((x): x is string => !!x);
  for (const python of candidates) {
    if (!existsSync(python) && python.includes("/")) continue;
    try {
      execFileSync(python, ["-c", "import torch, transformers, peft"], { stdio: "ignore" });
      return { python };
    } catch {
      // try the next one
    }
  }
  return { reason: `no Python with torch, transformers and peft (tried ${candidates.join(", ")}): see scripts/reference/README.md` };
}

describe("what pbrl saves loads in Python", () => {
  it("PEFT loads every family's adapter pbrl saved, and transformers the merged checkpoint, with the reference logits", async (ctx) => {
    const py = findPeftPython();
    if (!("python" in py)) {
      if (process.env["PBRL_REQUIRE_FIXTURE_PYTHON"] === "1") throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${py.reason}`);
      ctx.skip(py.reason);
      return;
    }
    await useBackend("cpu");
    const dir = tmp();
    const adapters: string[] = [];
    const merged: string[] = [];
    for (const family of FAMILIES) {
      const p = await loadPretrained(path.join(LORA, family), { baseModel: path.join(FIXTURES, family) });
      await savePretrained(path.join(dir, family), p);
      await savePretrained(path.join(dir, `${family}-merged`), p, { merge: true });
      p.model.dispose();
      adapters.push("--check-pbrl-adapter", path.join(dir, family));
      merged.push("--check-merged", path.join(dir, `${family}-merged`));
    }
    const script = path.resolve(import.meta.dirname, "../../../scripts/reference/make_lora_fixtures.py");
    const against = [...FAMILIES, ...FAMILIES].flatMap((f) => ["--against", f]);
    const { stdout } = await promisify(execFile)(py.python, [script, ...adapters, ...merged, ...against], { timeout: 400_000 });
    const diffs = [...stdout.matchAll(/max_abs_logit_diff=(\S+)/g)].map((m) => Number(m[1]));
    expect(diffs, stdout).toHaveLength(2 * FAMILIES.length);
    expect(
      diffs.every((d) => d <= 1e-4),
      stdout,
    ).toBe(true);
  }, 480_000);
});

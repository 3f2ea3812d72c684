// The families beyond Llama/Qwen2 (qwen3, mistral, gemma3_text, phi3) through everything pbrl does
// with a model besides the parity checks (parity.test.ts): training steps, scalar heads on left-
// padded batches, saving in the Hugging Face layout — and, when the fixture Python is there,
// transformers loading what pbrl saved with the reference logits. Runs on the suite's backend
// (PBRL_BACKEND, default wasm).
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdamW, RngStream, tf } from "@pbrl/core-tensor";
import {
  buildScoringBatch,
  completionLogProbs,
  gatherRows,
  lastTokenIndices,
  loadPretrained,
  positionsFromMask,
  savePretrained,
  ScalarHead,
  type CausalLM,
  type Pretrained,
} from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

const FAMILIES = ["tiny-qwen3", "tiny-mistral", "tiny-gemma3", "tiny-phi3"];
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-family-"));

function nllStep(model: CausalLM, opt: AdamW, batch: ReturnType<typeof buildScoringBatch>): { loss: number; zeroGrads: string[] } {
  const { value, grads } = tf.variableGrads(() => {
    const { tokens, sums } = completionLogProbs(model, batch);
    tokens.dispose();
    return tf.neg(tf.mean(sums)) as tf.Scalar;
  }, model.trainableVariables());
  const named = model.gradsByWeightName(grads);
  const zeroGrads = [...named].filter(([, g]) => tf.tidy(() => tf.max(tf.abs(g)).dataSync()[0]!) === 0).map(([n]) => n);
  opt.step(named);
  const loss = value.dataSync()[0]!;
  tf.dispose([value, ...named.values()]);
  return { loss, zeroGrads };
}

describe.each(FAMILIES)("%s beyond parity", (name) => {
  const ref = reference(name);
  let p: Pretrained;
  beforeAll(async () => {
    p = await loadPretrained(path.join(FIXTURES, name));
  });
  afterAll(() => p.model.dispose());

  it("trains: every weight gets a gradient, and AdamW steps lower the NLL of a fixed batch", async () => {
    const model = (await loadPretrained(path.join(FIXTURES, name))).model;
    const batch = buildScoringBatch(
      ref.logprobs.items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids })),
      ref.greedy_batched.pad_token_id,
    );
    const before = model.hostWeights();
    const opt = new AdamW(model.params, { lr: 1e-2, weightDecay: 0 });
    const first = nllStep(model, opt, batch);
    expect(first.zeroGrads).toEqual([]);
    let last = first.loss;
    for (let i = 0; i < 3; i++) last = nllStep(model, opt, batch).loss;
    expect(last).toBeLessThan(first.loss * 0.9);
    for (const [n, t] of model.hostWeights())
      expect(
        t.data.some((v, i) => v !== before.get(n)!.data[i]),
        n,
      ).toBe(true);
    opt.dispose();
    model.dispose();
  });

  it("a scalar head reads the same value of a row in a left-padded batch as of the row alone, and its gradient reaches every backbone weight", () => {
    const prompts = ref.greedy.results.map((r) => r.input_ids);
    const head = ScalarHead.init({ hiddenSize: p.model.config.hiddenSize, hiddenDim: 8, prefix: "v_head" }, RngStream.fromSeed(3, "head"));
    const pad = ref.greedy_batched.pad_token_id;
    const values = (rows: readonly (readonly number[])[]): tf.Tensor1D => {
      const len = Math.max(...rows.map((r) => r.length));
      const ids = new Int32Array(rows.length * len).fill(pad);
      const mask = new Uint8Array(rows.length * len);
      rows.forEach((r, i) => {
        ids.set(r, i * len + len - r.length);
        mask.fill(1, i * len + len - r.length, (i + 1) * len);
      });
      // sequenceLengths: longrope (tiny-phi3) picks its factors per row, as for the row alone.
      const h = p.model.hidden({
        ids,
        batch: rows.length,
        length: len,
        keyMask: mask,
        positions: positionsFromMask(mask, rows.length, len),
        sequenceLengths: rows.map((r) => r.length),
      });
      return head.apply(gatherRows(h, lastTokenIndices(mask, rows.length, len)));
    };
    const batched = tf.tidy(() => Array.from(values(prompts).dataSync()));
    const alone = prompts.map((r) => tf.tidy(() => values([r]).dataSync()[0]!));
    batched.forEach((v, i) => expect(Math.abs(v - alone[i]!)).toBeLessThanOrEqual(1e-5));
    const { value, grads } = tf.variableGrads(() => tf.sum(values(prompts)) as tf.Scalar, p.model.trainableVariables());
    const named = p.model.gradsByWeightName(grads);
    const untouched = [...p.model.params.keys()].filter((n) => named.get(n) === undefined || tf.tidy(() => tf.max(tf.abs(named.get(n)!)).dataSync()[0]!) === 0);
    // The output head and the final logits take no part in a value read from hidden states.
    expect(untouched).toEqual(p.model.config.tieWordEmbeddings ? [] : ["lm_head.weight"]);
    tf.dispose([value, ...named.values()]);
    head.dispose();
  });

  it("saves in the Hugging Face layout (fused Phi-3 weights stay fused, tied embeddings written once) and reloads bit-identically", async () => {
    const out = path.join(tmp(), "saved");
    await savePretrained(out, p, { maxShardBytes: 150_000 });
    expect(readdirSync(out)).toEqual(
      expect.arrayContaining(["config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"]),
    );
    const index = JSON.parse(readFileSync(path.join(out, "model.safetensors.index.json"), "utf8")) as { weight_map: Record<string, string> };
    const names = Object.keys(index.weight_map);
    expect(names.includes("lm_head.weight")).toBe(!p.model.config.tieWordEmbeddings);
    expect(names.some((n) => n.endsWith("self_attn.qkv_proj.weight"))).toBe(name === "tiny-phi3");
    expect(names.some((n) => n.endsWith("pre_feedforward_layernorm.weight"))).toBe(name === "tiny-gemma3");
    expect(JSON.parse(readFileSync(path.join(out, "config.json"), "utf8"))).toEqual({
      ...JSON.parse(readFileSync(path.join(FIXTURES, name, "config.json"), "utf8")),
      dtype: "float32",
    });
    const back = await loadPretrained(out);
    const a = p.model.hostWeights();
    for (const [k, t] of back.model.hostWeights()) expect(Buffer.from(t.data.buffer).equals(Buffer.from(a.get(k)!.data.buffer)), k).toBe(true);
    back.model.dispose();
  });
});

// transformers' side: the fixture Python (PBRL_FIXTURE_PYTHON, PBRL_PYTHON or the repository's
// .venv-ref) loads every checkpoint pbrl saved and recomputes the reference logits; skipped, with
// the reason, when there is none with transformers, unless PBRL_REQUIRE_FIXTURE_PYTHON=1.
function findPython(): { python: string } | { reason: string } {
  const candidates = [
    process.env["PBRL_FIXTURE_PYTHON"],
    process.env["PBRL_PYTHON"],
    path.resolve(import.meta.dirname, "../../../.venv-ref/bin/python"),
  ].filter((x): x is string => !!x);
  for (const python of candidates) {
    if (!existsSync(python) && python.includes("/")) continue;
    try {
      execFileSync(python, ["-c", "import torch, transformers"], { stdio: "ignore" });
      return { python };
    } catch {
      // try the next one
    }
  }
  return { reason: `no Python with torch and transformers (tried ${candidates.join(", ")}): set PBRL_PYTHON, or see scripts/reference/README.md` };
}

describe("checkpoints pbrl saved load in transformers with the reference logits", () => {
  it("every family, float32 and sharded, in one Python process", async (ctx) => {
    const py = findPython();
    if (!("python" in py)) {
      if (process.env["PBRL_REQUIRE_FIXTURE_PYTHON"] === "1") throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${py.reason}`);
      ctx.skip(py.reason);
      return;
    }
    const dir = tmp();
    const args: string[] = [];
    for (const name of FAMILIES) {
      const p = await loadPretrained(path.join(FIXTURES, name));
      await savePretrained(path.join(dir, name), p);
      await savePretrained(path.join(dir, `${name}-sharded`), p, { maxShardBytes: 60_000 });
      p.model.dispose();
      args.push("--check-pbrl-dir", path.join(dir, name), "--against", name, "--check-pbrl-dir", path.join(dir, `${name}-sharded`), "--against", name);
    }
    const script = path.resolve(import.meta.dirname, "../../../scripts/reference/make_model_fixtures.py");
    const { stdout } = await promisify(execFile)(py.python, [script, ...args], { timeout: 400_000 });
    const diffs = [...stdout.matchAll(/max_abs_logit_diff=(\S+)/g)].map((m) => Number(m[1]));
    const vsOriginal = [...stdout.matchAll(/max_abs_logit_diff_vs_original=(\S+)/g)].map((m) => Number(m[1]));
    expect(diffs).toHaveLength(2 * FAMILIES.length);
    expect(vsOriginal).toHaveLength(2 * FAMILIES.length);
    // Within 1e-4 of the reference logits, which another CPU's kernels computed (the script says MISMATCH otherwise) ...
    expect(diffs.every((d) => d <= 1e-4)).toBe(true);
    // ... and, weights being stored as the float32 values loaded, bit for bit the logits transformers
    // computes here from the fixture pbrl loaded.
    expect(
      vsOriginal.every((d) => d === 0),
      stdout,
    ).toBe(true);
    expect(stdout).not.toMatch(/MISMATCH|FAIL/);
  }, 480_000);
});

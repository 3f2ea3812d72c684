// A training step through the full model works on every backend, lowers the loss, and — once
// warmed up — neither it nor generation leaves tensors behind.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { AdamW, clipGradNorm, liveTensorCount, RngStream, tf, useBackend, type BackendName } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, generate, loadPretrained, type CausalLM } from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

function nllStep(model: CausalLM, opt: AdamW, batch: ReturnType<typeof buildScoringBatch>): number {
  const { value, grads } = tf.variableGrads(() => {
    const { tokens, sums } = completionLogProbs(model, batch);
    tokens.dispose();
    return tf.neg(tf.mean(sums)) as tf.Scalar;
  }, model.trainableVariables());
  const { grads: clipped } = clipGradNorm(model.gradsByWeightName(grads), 1.0);
  opt.step(clipped);
  const loss = value.dataSync()[0]!;
  tf.dispose([value, ...clipped.values()]);
  return loss;
}

describe.each<BackendName>(["wasm", "cpu"])("training on %s", (backend) => {
  it("lowers the NLL of a fixed batch, and every weight (embeddings included) moves", async () => {
    await useBackend(backend);
    const p = await loadPretrained(path.join(FIXTURES, "tiny-qwen2"));
    const before = p.model.hostWeights();
    const items = reference("tiny-qwen2").logprobs.items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids }));
    const batch = buildScoringBatch(items, 381);
    const opt = new AdamW(p.model.params, { lr: 1e-2, weightDecay: 0 });
    const first = nllStep(p.model, opt, batch);
    let last = first;
    for (let i = 0; i < 4; i++) last = nllStep(p.model, opt, batch);
    expect(last).toBeLessThan(first * 0.9);
    for (const [name, t] of p.model.hostWeights()) {
      const moved = t.data.some((v, i) => v !== before.get(name)!.data[i]);
      expect(moved, name).toBe(true);
    }
    opt.dispose();
    p.model.dispose();
  });
});

describe("no tensor leaks", () => {
  it("64 generated tokens and one training step leave the live tensor count unchanged after warm-up", async () => {
    await useBackend("wasm");
    const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
    const prompts = reference("tiny-llama").greedy.results.map((r) => r.input_ids);
    const items = reference("tiny-llama").logprobs.items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids }));
    const batch = buildScoringBatch(items, 0);
    const opt = new AdamW(p.model.params, { lr: 1e-3 });
    const gen = () => generate(p.model, prompts, { maxNewTokens: 64, temperature: 1, padTokenId: 0, rng: RngStream.fromSeed(0, "g") });
    gen();
    nllStep(p.model, opt, batch); // warm-up creates the optimizer's moment buffers
    const before = liveTensorCount();
    const out = gen();
    expect(out.every((s) => s.tokens.length === 64 || s.finishReason === "stop")).toBe(true);
    expect(liveTensorCount()).toBe(before);
    nllStep(p.model, opt, batch);
    expect(liveTensorCount()).toBe(before);
    opt.dispose();
    p.model.dispose();
  });
});

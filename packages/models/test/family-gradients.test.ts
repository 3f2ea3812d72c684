// MADPO gradients through the new families against PyTorch
// (scripts/reference/make_family_grad_fixtures.py): agents tiny-gemma3 and tiny-phi3, a fixed set
// of pairs, each agent's loss −log σ(β(δᵢ + Σ_{k≠i} δₖ)) with the other agents' margins detached.
// @pbrl/dpo depends on this package, so the loss is written out here from completion log-probs
// (the same decentralized scoring: a completion's last token left out); packages/dpo's own
// parity test checks its implementation against the same kind of fixture for llama and qwen2.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, nativeThreads, readSafetensors, tf, useBackend } from "@pbrl/core-tensor";
import { describeEachBackend, expectCloseToReference } from "@pbrl/test-fixtures";
import { buildScoringBatch, completionLogProbs, loadPretrained, type CausalLM } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const FIX = path.join(FIXTURES, "madpo-families");
interface Ref {
  agents: string[];
  beta: number;
  pairs: { prompt: number[]; winner: number[]; loser: number[] }[][];
  margins: number[][];
  agent_losses: number[];
}
const ref = JSON.parse(readFileSync(path.join(FIX, "reference.json"), "utf8")) as Ref;
const PAD = 0;

/** δ per pair for agent `a`: winners then losers scored in one right-padded batch. */
function margins(model: CausalLM, a: number): tf.Tensor1D {
  const items = ref.pairs.flatMap((p) => [p[a]!.winner, p[a]!.loser].map((c) => ({ promptIds: p[a]!.prompt, completionIds: c.slice(0, -1) })));
  const { tokens, sums } = completionLogProbs(model, buildScoringBatch(items, PAD));
  tokens.dispose();
  const [w, l] = tf.split(tf.reshape(sums, [ref.pairs.length, 2]), 2, 1) as [tf.Tensor2D, tf.Tensor2D];
  return tf.reshape(tf.sub(w, l), [ref.pairs.length]);
}

/** mean over pairs of −log σ(β(δ + others)) = softplus(−β(δ + others)). */
function madpoLoss(delta: tf.Tensor1D, others: Float32Array): tf.Scalar {
  return tf.mean(tf.softplus(tf.neg(tf.mul(tf.add(delta, tf.tensor1d(others)), ref.beta)))) as tf.Scalar;
}

const ADDONS = { native: loadNativeAddon(), libtorch: loadLibtorchAddon(nativeThreads()) };

describeEachBackend("MADPO through gemma3_text and phi3 against PyTorch on $backend", ADDONS, (backend) => {
  let models: CausalLM[];
  beforeAll(async () => {
    await useBackend(backend);
    models = await Promise.all(ref.agents.map(async (n) => (await loadPretrained(path.join(FIXTURES, n))).model));
  });
  afterAll(() => models.forEach((m) => m.dispose()));

  it("margins within 1e-4, each agent's loss within 1e-5 and its gradient within 1e-4", async () => {
    const detached = models.map((m, a) => tf.tidy(() => Float32Array.from(margins(m, a).dataSync())));
    detached.forEach((row, a) => row.forEach((v, p) => expect(Math.abs(v - ref.margins[a]![p]!)).toBeLessThanOrEqual(1e-4)));
    for (let a = 0; a < models.length; a++) {
      const model = models[a]!;
      const others = new Float32Array(ref.pairs.length);
      detached.forEach((row, k) => k !== a && row.forEach((v, p) => (others[p]! += v)));
      const { value, grads } = tf.variableGrads(() => madpoLoss(margins(model, a), others), model.trainableVariables());
      expect(Math.abs(value.dataSync()[0]! - ref.agent_losses[a]!)).toBeLessThanOrEqual(1e-5);
      const named = model.gradsByWeightName(grads);
      const want = await readSafetensors(path.join(FIX, `grads_agent${a}.safetensors`));
      expectCloseToReference(named, want.tensors, 1e-4, { label: `${ref.agents[a]} largest gradient difference` });
      tf.dispose([value, ...named.values()]);
    }
  });
});

// gradient_checkpointing: each decoder layer keeps only its input and is recomputed in the
// backward pass. The gradients are those of the plain pass (full fine-tuning, and LoRA with
// dropout, whose masks the recomputation replays), the dropout stream ends where it would, and a
// training pass holds fewer live tensor bytes at its peak.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, DEFAULT_LORA, loadPretrained, type CausalLM } from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

const batch = () =>
  buildScoringBatch(
    reference("tiny-llama").logprobs.items.map((it) => ({ promptIds: it.prompt_ids, completionIds: it.completion_ids })),
    0,
  );

/** One training pass's gradients by weight name (host copies), and the peak of live tensor bytes during it. */
function gradients(model: CausalLM): { grads: Map<string, Float32Array>; peakBytes: number } {
  const b = batch();
  const before = tf.memory().numBytes;
  let peak = 0;
  const engine = tf.engine() as unknown as { runKernel: (...a: unknown[]) => unknown };
  const run = engine.runKernel.bind(engine);
  engine.runKernel = (...a: unknown[]) => {
    const out = run(...a);
    peak = Math.max(peak, tf.memory().numBytes);
    return out;
  };
  try {
    const { value, grads } = model.training(() =>
      tf.variableGrads(() => {
        const { tokens, sums } = completionLogProbs(model, b);
        tokens.dispose();
        return tf.neg(tf.mean(sums)) as tf.Scalar;
      }, model.trainableVariables()),
    );
    const named = model.gradsByWeightName(grads);
    const host = new Map([...named].map(([n, g]) => [n, Float32Array.from(g.dataSync() as Float32Array)]));
    tf.dispose([value, ...named.values()]);
    return { grads: host, peakBytes: peak - before };
  } finally {
    engine.runKernel = run;
  }
}

function maxDiff(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  expect([...a.keys()].sort()).toEqual([...b.keys()].sort());
  let worst = 0;
  for (const [n, g] of a) g.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - b.get(n)![i]!))));
  return worst;
}

describe("gradient checkpointing", () => {
  it("full fine-tuning: the same gradients with fewer live bytes at the peak", async () => {
    const model = (await loadPretrained(path.join(FIXTURES, "tiny-llama"))).model;
    const plain = gradients(model);
    model.gradientCheckpointing = true;
    const recomputed = gradients(model);
    expect(maxDiff(plain.grads, recomputed.grads)).toBeLessThanOrEqual(1e-6);
    expect(recomputed.peakBytes).toBeLessThan(plain.peakBytes);
    model.dispose();
  });

  it("LoRA with dropout: the recomputation replays the forward pass's masks, and the stream ends where it would", async () => {
    const base = (await loadPretrained(path.join(FIXTURES, "tiny-llama"))).model;
    const lora = base.withLora({ ...DEFAULT_LORA, r: 4, dropout: 0.3, targetModules: "all-linear" }, RngStream.fromSeed(3, "init"));
    for (const f of lora.adapter!.modules.values()) tf.tidy(() => f.b.assign(tf.mul(tf.onesLike(f.b), 0.05)));
    lora.dropoutStream = RngStream.fromSeed(9, "dropout");
    const plain = gradients(lora);
    const after = lora.dropoutStream.getState();
    lora.dropoutStream = RngStream.fromSeed(9, "dropout");
    lora.gradientCheckpointing = true;
    const recomputed = gradients(lora);
    expect(lora.dropoutStream.getState()).toEqual(after);
    expect(maxDiff(plain.grads, recomputed.grads)).toBeLessThanOrEqual(1e-6);
    // The masks mattered: another stream gives other gradients.
    lora.dropoutStream = RngStream.fromSeed(10, "dropout");
    expect(maxDiff(plain.grads, gradients(lora).grads)).toBeGreaterThan(1e-4);
    lora.dispose();
    base.dispose();
    expect(tf.memory().numTensors).toBe(0);
  });
});

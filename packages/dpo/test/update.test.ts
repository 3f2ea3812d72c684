import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { AdamW, liveTensorCount, tf } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { agentMargins, localAgents, madpoUpdate, NonFiniteError, type TrainableAgent } from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const MODELS = MODEL_FIXTURES;

async function agents(lr = 1e-2, eps = 1e-8): Promise<TrainableAgent[]> {
  const out: TrainableAgent[] = [];
  for (const [name, pad] of [
    ["tiny-llama", 0],
    ["tiny-qwen2", 381],
  ] as const) {
    const { model } = await loadPretrained(path.join(MODELS, name));
    out.push({ model, optimizer: new AdamW(model.params, { lr, eps, weightDecay: 0 }), padTokenId: pad });
  }
  return out;
}

const batch: AgentPairTokens[][] = [
  [
    { promptIds: [1, 40, 41], winnerIds: [50, 51, 52, 2], loserIds: [60, 61] },
    { promptIds: [30, 31], winnerIds: [70, 71, 72], loserIds: [80, 81, 82, 83] },
  ],
  [
    { promptIds: [1, 42], winnerIds: [53, 54], loserIds: [62, 63, 64] },
    { promptIds: [32, 33, 34], winnerIds: [73, 383], loserIds: [84] },
  ],
];

function margins(a: TrainableAgent[]): number[][] {
  return a.map((x, i) =>
    tf.tidy(() =>
      Array.from(
        agentMargins(
          x.model,
          batch.map((p) => p[i]!),
          { scoreLastToken: false, padTokenId: x.padTokenId },
        ).dataSync(),
      ),
    ),
  );
}

describe("the MADPO update", () => {
  it("raises every agent's margin on the batch and reports pre-update metrics", async () => {
    const a = await agents();
    const before = margins(a);
    const metrics = await madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: "batch 0" });
    expect(metrics["agent_0/margin"]).toBeCloseTo((before[0]![0]! + before[0]![1]!) / 2, 3);
    expect(Object.keys(metrics).sort()).toEqual(["agent_0/margin", "agent_1/margin", "joint/accuracy", "joint/margin", "loss"]);
    for (let step = 0; step < 3; step++) await madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: `batch ${step + 1}` });
    const after = margins(a);
    for (let i = 0; i < 2; i++) for (let p = 0; p < 2; p++) expect(after[i]![p]!).toBeGreaterThan(before[i]![p]!);
    a.forEach((x) => (x.optimizer.dispose(), x.model.dispose()));
  });

  it("updates each agent with the joint loss's gradient: identical to stepping on −log σ(βΣδ) for that agent", async () => {
    // Reference: agent 0 alone, stepping on the joint loss with agent 1's margins as constants.
    // A huge eps makes AdamW's first step linear in the gradient (lr·g/eps), so float noise in
    // near-zero gradients is not amplified into ±lr steps.
    const a = await agents(1, 1e3);
    const b = await agents(1, 1e3);
    const start = a[0]!.model.hostWeights();
    const others = margins(b)[1]!;
    const { value, grads } = tf.variableGrads(() => {
      const own = agentMargins(
        b[0]!.model,
        batch.map((p) => p[0]!),
        { scoreLastToken: false, padTokenId: 0 },
      );
      return tf.mean(tf.neg(tf.log(tf.sigmoid(tf.mul(tf.add(own, tf.tensor1d(others)), 0.1))))) as tf.Scalar;
    }, b[0]!.model.trainableVariables());
    const named = b[0]!.model.gradsByWeightName(grads);
    b[0]!.optimizer.step(named);
    tf.dispose([value, ...named.values()]);
    await madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: "batch 0" });
    const wa = a[0]!.model.hostWeights();
    let worst = 0;
    let largest = 0;
    for (const [k, t] of b[0]!.model.hostWeights()) {
      t.data.forEach((v, i) => {
        worst = Math.max(worst, Math.abs(v - wa.get(k)!.data[i]!));
        largest = Math.max(largest, Math.abs(v - start.get(k)!.data[i]!));
      });
    }
    expect(largest).toBeGreaterThan(1e-6); // the step moved the weights
    expect(worst).toBeLessThan(1e-3 * largest);
    [...a, ...b].forEach((x) => (x.optimizer.dispose(), x.model.dispose()));
  });

  it("leaves no tensors behind once the optimizers have their state", async () => {
    const a = await agents();
    await madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: "warm-up" });
    const n = liveTensorCount();
    await madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: true, where: "batch 1" });
    expect(liveTensorCount()).toBe(n);
    a.forEach((x) => (x.optimizer.dispose(), x.model.dispose()));
  });

  it("stops with an error naming the agent and batch on a non-finite loss", async () => {
    const a = await agents();
    const w = a[1]!.model.params.get("model.norm.weight")!;
    w.assign(tf.fill(w.shape, NaN));
    await expect(madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: "round 2, batch 5" })).rejects.toThrow(NonFiniteError);
    await expect(madpoUpdate(localAgents(a), batch, { beta: 0.1, scoreLastToken: false, where: "round 2, batch 5" })).rejects.toThrow(
      /agent 1 .*non-finite.* round 2, batch 5/,
    );
    a.forEach((x) => (x.optimizer.dispose(), x.model.dispose()));
  });
});

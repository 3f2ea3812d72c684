// The edges of the MADPO update that the behaviour tests do not reach: empty inputs, bad
// micro-batch sizes, a pair without an agent's side, which options reach the scoring, the
// non-finite guard on each of its two conditions, and a failing agent step (written against
// StrykerJS's survivors; see README "Mutation testing").
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { AdamW, tf } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import {
  agentGradients,
  agentLoss,
  agentMargins,
  agentPairs,
  applyAgentGradients,
  detachedMargins,
  jointMargins,
  localAgents,
  madpoLoss,
  madpoUpdate,
  marginMetrics,
  NonFiniteError,
  othersSum,
  type MadpoAgents,
  type TrainableAgent,
} from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

async function agent(): Promise<TrainableAgent> {
  const { model } = await loadPretrained(path.join(MODEL_FIXTURES, "tiny-llama"));
  return { model, optimizer: new AdamW(model.params, { lr: 1e-2, weightDecay: 0 }), padTokenId: 0 };
}

const pairs: AgentPairTokens[] = [
  { promptIds: [1, 40, 41], winnerIds: [50, 51, 52], loserIds: [60, 61] },
  { promptIds: [1, 30], winnerIds: [70, 71], loserIds: [80, 81, 82] },
];

describe("MADPO on empty input", () => {
  it("no agents or no pairs: no joint margins, a loss and accuracy of 0 (not NaN)", () => {
    expect(jointMargins([])).toEqual([]);
    expect(Array.from(othersSum([], 0))).toEqual([]);
    expect(madpoLoss([], 0.1)).toBe(0);
    expect(marginMetrics([[], []], 0.1)["joint/accuracy"]).toBe(0);
    expect(marginMetrics([[], []], 0.1).loss).toBe(0);
  });

  it("refuses an empty batch", async () => {
    await expect(madpoUpdate(localAgents([]), [], { beta: 0.1, scoreLastToken: false, where: "batch 1" })).rejects.toThrow("madpoUpdate: empty batch");
  });

  it("refuses a pair that lacks an agent's side, naming the agent", () => {
    expect(() => agentPairs([[pairs[0]!, pairs[1]!], [pairs[0]!]], 1)).toThrow("a pair has no tokens for agent 1");
  });
});

describe("the scoring options reach every margin", () => {
  it("detachedMargins and agentGradients score the last token exactly when asked", async () => {
    const a = await agent();
    const direct = (last: boolean) => tf.tidy(() => Array.from(agentMargins(a.model, pairs, { scoreLastToken: last, padTokenId: 0 }).dataSync()));
    const [withLast, without] = [direct(true), direct(false)];
    expect(withLast).not.toEqual(without);
    expect(detachedMargins(a, pairs, true)).toEqual(withLast);
    expect(detachedMargins(a, pairs, false)).toEqual(without);

    const others = Float32Array.from([0.3, -0.2]);
    const expected = tf.tidy(() => agentLoss(tf.tensor1d(withLast), others, 0.5).dataSync()[0]!);
    const g = agentGradients(a, pairs, others, { beta: 0.5, scoreLastToken: true, where: "test" });
    expect(g.loss).toBeCloseTo(expected, 5);
    tf.dispose([...g.grads.values()]);
    a.optimizer.dispose();
    a.model.dispose();
  });
});

describe("micro-batches", () => {
  it("refuses a micro-batch size that is not an integer ≥ 1, naming it", async () => {
    const a = await agent();
    for (const microBatch of [0, -1, 1.5])
      expect(() => agentGradients(a, pairs, new Float32Array(2), { beta: 0.1, scoreLastToken: false, microBatch, where: "test" })).toThrow(
        `microBatch must be an integer ≥ 1, got ${microBatch}`,
      );
    a.optimizer.dispose();
    a.model.dispose();
  });

  it("sums the micro-batches' losses to the batch's loss", async () => {
    const a = await agent();
    const options = { beta: 0.5, scoreLastToken: false, where: "test" };
    const others = Float32Array.from([0.3, -0.2]);
    const whole = agentGradients(a, pairs, others, options);
    const split = agentGradients(a, pairs, others, { ...options, microBatch: 1 });
    expect(whole.loss).toBeGreaterThan(0);
    expect(split.loss).toBeCloseTo(whole.loss, 5);
    tf.dispose([...whole.grads.values(), ...split.grads.values()]);
    a.optimizer.dispose();
    a.model.dispose();
  });
});

describe("the non-finite guard", () => {
  const gradsOf = (a: TrainableAgent, value: number) => new Map([...a.model.params].map(([name, w]) => [name, tf.fill(w.shape, value)]));
  const weights = (a: TrainableAgent) => Float32Array.from(a.model.params.get("model.norm.weight")!.dataSync() as Float32Array);

  it("stops before stepping on non-finite gradients under a finite loss, and on a non-finite loss", async () => {
    const a = await agent();
    const before = weights(a);
    expect(() => applyAgentGradients(a, { grads: gradsOf(a, Infinity), loss: 0.7 }, 1, { where: "round 2, batch 3" })).toThrow(
      new NonFiniteError("MADPO: agent 1 has non-finite gradients (norm Infinity) in round 2, batch 3"),
    );
    expect(() => applyAgentGradients(a, { grads: gradsOf(a, 0.01), loss: NaN }, 0, { where: "round 2, batch 4" })).toThrow(
      new NonFiniteError("MADPO: agent 0 has a non-finite loss (NaN) in round 2, batch 4"),
    );
    expect(weights(a)).toEqual(before);
    applyAgentGradients(a, { grads: gradsOf(a, 0.01), loss: 0.7 }, 0, { where: "round 2, batch 5" });
    expect(weights(a)).not.toEqual(before);
    a.optimizer.dispose();
    a.model.dispose();
  });
});

describe("a failing agent step", () => {
  it("is the update's error, after every other agent's step has run", async () => {
    const team = [await agent(), await agent()];
    const local = localAgents(team);
    const stepped: number[] = [];
    const agents: MadpoAgents = {
      count: 2,
      margins: local.margins,
      step: async (i, p, others, options) => {
        if (i === 0) throw new Error("worker 0 exited");
        await local.step(i, p, others, options);
        stepped.push(i);
      },
    };
    const batch = pairs.map((p) => [p, p]);
    await expect(madpoUpdate(agents, batch, { beta: 0.1, scoreLastToken: false, where: "batch 1" })).rejects.toThrow("worker 0 exited");
    expect(stepped).toEqual([1]);
    team.forEach((x) => (x.optimizer.dispose(), x.model.dispose()));
  });
});

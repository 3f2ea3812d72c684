// gradient_accumulation_steps: k micro-batches whose gradients are summed (each weighted by its
// share of the batch) give the gradient of the whole batch in one pass, within 1e-6 (relative to the
// largest gradient), for full and
// LoRA agents, so the optimizer takes the same step.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { AdamW, RngStream, tf } from "@pbrl/core-tensor";
import { DEFAULT_LORA, loadPretrained, type CausalLM } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { agentGradients, applyAgentGradients, localAgents, madpoUpdate, type TrainableAgent } from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const pair = (p: number[], w: number[], l: number[]): AgentPairTokens => ({ promptIds: p, winnerIds: w, loserIds: l });
// 6 pairs of two agents, of different lengths.
const batch: AgentPairTokens[][] = Array.from({ length: 6 }, (_, k) => [
  pair([1, 40 + k, 41], [50 + k, 51, 52, 2].slice(0, 2 + (k % 3)), [60 + k, 61]),
  pair([1, 30 + k], [70 + k, 71], [80, 81 + k, 82].slice(0, 1 + (k % 3))),
]);

/** AdamW that keeps a copy of every gradient it steps with. */
class RecordingAdamW extends AdamW {
  readonly seen: Map<string, Float32Array>[] = [];
  override step(grads: ReadonlyMap<string, tf.Tensor>): void {
    this.seen.push(new Map([...grads].map(([n, g]) => [n, Float32Array.from(g.dataSync() as Float32Array)])));
    super.step(grads);
  }
}

async function team(lora: boolean): Promise<{ agents: TrainableAgent[]; models: CausalLM[]; optimizers: RecordingAdamW[] }> {
  const models: CausalLM[] = [];
  for (let i = 0; i < 2; i++) {
    const base = (await loadPretrained(path.join(MODEL_FIXTURES, "tiny-llama"))).model;
    const m = lora ? base.withLora({ ...DEFAULT_LORA, r: 4, dropout: 0, targetModules: "all-linear" }, RngStream.fromSeed(i, "init")) : base;
    if (lora) {
      // B = 0 would make A's first gradient zero: start from a trained-looking adapter.
      for (const f of m.adapter!.modules.values()) tf.tidy(() => f.b.assign(tf.mul(tf.onesLike(f.b), 0.01)));
      base.dispose();
    }
    models.push(m);
  }
  const optimizers = models.map((model) => new RecordingAdamW(model.params, { lr: 1e-2, weightDecay: 0 }));
  return { models, optimizers, agents: models.map((model, i) => ({ model, optimizer: optimizers[i]!, padTokenId: 0 })) };
}

function maxDiff(a: CausalLM, b: CausalLM): number {
  let worst = 0;
  const bw = b.hostWeights();
  for (const [name, t] of a.hostWeights()) {
    const u = bw.get(name)!.data;
    t.data.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - u[i]!))));
  }
  return worst;
}

describe.each([false, true])("MADPO gradient accumulation (LoRA: %s)", (lora) => {
  it("3 micro-batches of 2 pairs give the gradients of one batch of 6 within 1e-6, step after step", async () => {
    const whole = await team(lora);
    const split = await team(lora);
    for (let step = 0; step < 2; step++) {
      const mw = await madpoUpdate(localAgents(whole.agents), batch, { beta: 0.1, scoreLastToken: false, where: "whole" });
      const ms = await madpoUpdate(localAgents(split.agents), batch, { beta: 0.1, scoreLastToken: false, where: "split", microBatch: 2 });
      expect(ms.loss).toBeCloseTo(mw.loss, 6);
    }
    const blas = ["native", "libtorch"].includes(tf.getBackend());
    // The same gradients, step after step (the second from the same weights too, as the first steps agree).
    let worst = 0;
    let largest = 0;
    for (let i = 0; i < 2; i++) {
      const [w, sp] = [whole.optimizers[i]!.seen, split.optimizers[i]!.seen];
      expect(sp.length).toBe(w.length);
      w.forEach((grads, s) => {
        expect([...sp[s]!.keys()].sort()).toEqual([...grads.keys()].sort());
        for (const [name, g] of grads)
          g.forEach((x, j) => ((worst = Math.max(worst, Math.abs(x - sp[s]!.get(name)![j]!))), (largest = Math.max(largest, Math.abs(x)))));
      });
      // (Full models' weights are not compared: AdamW turns a rounding difference in a tiny gradient into a full-size step.)
      if (lora) expect(maxDiff(whole.models[i]!, split.models[i]!)).toBeLessThanOrEqual(blas ? 3e-5 : 1e-6);
    }
    expect(largest).toBeGreaterThan(1e-3);
    // Within 1e-6 of the largest gradient where the kernels sum in a fixed order (wasm, cpu); a BLAS
    // (native's OpenBLAS, libtorch's MKL) blocks a product of 2 rows and one of 6 differently, so its
    // float32 sums round apart by up to ~1e-5 of the largest gradient (measured on a Zen 3).
    expect(worst / Math.max(1, largest)).toBeLessThanOrEqual(blas ? 3e-5 : 1e-6);
    // The weights did move: the comparison is not of two untouched models.
    const fresh = await team(lora);
    expect(maxDiff(whole.models[0]!, fresh.models[0]!)).toBeGreaterThan(1e-4);
    for (const t of [whole, split, fresh]) for (const m of t.models) m.dispose();
  });
});

describe("data-parallel shares (agentGradients with the whole batch's size)", () => {
  it("two replicas' gradients of 2 and 4 of 6 pairs sum to the whole batch's, within 1e-6 of the largest (3e-5 on a BLAS)", async () => {
    const { agents, models } = await team(false);
    const agent = agents[0]!;
    const pairs = batch.map((p) => p[0]!);
    const others = new Float32Array([0.3, -0.2, 0.1, 0, 0.5, -0.4]);
    const options = { beta: 0.1, scoreLastToken: false, where: "shares" };
    const whole = agentGradients(agent, pairs, others, options);
    const first = agentGradients(agent, pairs.slice(0, 2), others.subarray(0, 2), options, 6);
    const second = agentGradients(agent, pairs.slice(2), others.subarray(2), options, 6);
    // a share with no pairs adds nothing and scores nothing
    const none = agentGradients(agent, [], new Float32Array(0), options, 6);
    expect([none.grads.size, none.loss]).toEqual([0, 0]);
    expect(first.loss + second.loss).toBeCloseTo(whole.loss, 6);
    let worst = 0;
    let largest = 0;
    for (const [name, g] of whole.grads) {
      const w = g.dataSync();
      const a = first.grads.get(name)!.dataSync();
      const b = second.grads.get(name)!.dataSync();
      w.forEach((x, i) => ((worst = Math.max(worst, Math.abs(x - (a[i]! + b[i]!)))), (largest = Math.max(largest, Math.abs(x)))));
    }
    expect(largest).toBeGreaterThan(1e-3);
    const blas = ["native", "libtorch"].includes(tf.getBackend());
    expect(worst / Math.max(1, largest)).toBeLessThanOrEqual(blas ? 3e-5 : 1e-6);
    // applying the summed gradients steps the agent; a non-finite loss stops before the step
    const before = models[0]!.hostWeights();
    const summed = new Map([...first.grads].map(([n, g]) => [n, tf.add(g, second.grads.get(n)!)]));
    tf.dispose([...first.grads.values(), ...second.grads.values(), ...whole.grads.values()]);
    expect(() => applyAgentGradients(agent, { grads: new Map([...summed].map(([n, g]) => [n, g.clone()])), loss: NaN }, 0, options)).toThrow(
      /agent 0 has a non-finite loss \(NaN\) in shares/,
    );
    applyAgentGradients(agent, { grads: summed, loss: first.loss + second.loss }, 0, options);
    const after = models[0]!.hostWeights();
    let moved = 0;
    for (const [n, t] of before) t.data.forEach((x, i) => (moved = Math.max(moved, Math.abs(x - after.get(n)!.data[i]!))));
    expect(moved).toBeGreaterThan(1e-4);
    for (const m of models) m.dispose();
  });
});

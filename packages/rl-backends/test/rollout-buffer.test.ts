// rollout_buffer_size in the REINFORCE family's loop, as CoMLRL's MAGRPO loop: each agent is
// updated when its buffer holds rollout_buffer_size items, the buffer shuffled into mini-batches
// of train_batch_size (one optimizer step each), and buffers drain at the end of every epoch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import type { CandidateSampler } from "@pbrl/preference-data";
import { localPolicyGradientAgents, miniBatches, runRlEpochs, type BatchReport, type PolicyGradientAgents } from "../src/index.js";
import { disposeAgents, formatters, makeAgents, sampler, type TestAgent } from "./helpers.js";

const ITEMS5 = ["Hello world", "Add two numbers", "Once upon a time", "The river", "Snow falls"].map((prompt, i) => ({ prompt, id: `i${i}` }));

describe("miniBatches", () => {
  it("keeps a buffer that fits one mini-batch in order without drawing; shuffles a larger one, then splits it", () => {
    const rng = RngStream.fromSeed(7, "s");
    const before = JSON.stringify(rng.getState());
    expect(miniBatches(3, 4, rng)).toEqual([[0, 1, 2]]);
    expect(miniBatches(2, 2, rng)).toEqual([[0, 1]]);
    expect(JSON.stringify(rng.getState())).toBe(before);
    const order = RngStream.fromSeed(7, "s").permutation(5);
    expect(miniBatches(5, 2, rng)).toEqual([order.slice(0, 2), order.slice(2, 4), order.slice(4)]);
  });
});

describe("runRlEpochs with a rollout buffer", () => {
  let agents: TestAgent[];
  beforeAll(async () => {
    agents = await makeAgents(2, { lr: 1e-3 });
  });
  afterAll(() => disposeAgents(agents));

  it("samples a buffer of items at a time, steps each agent once per shuffled mini-batch, and drains the rest at every epoch's end", async () => {
    const sampled: number[] = [];
    const inner = sampler(agents, 3);
    const counting: CandidateSampler = { sample: (prompts, n, idx) => (sampled.push(prompts.length), inner.sample(prompts, n, idx)) };
    // the real agents in this thread, with a note of which items each step trained on
    const local = localPolicyGradientAgents(agents);
    const steps: number[][][] = [[], []];
    const recording: PolicyGradientAgents = {
      ...local,
      policyStep: (i, job) => (steps[i]!.push([...new Set(job.owners.map((o) => o.item))]), local.policyStep(i, job)),
    };
    const reports: BatchReport[] = [];
    await runRlEpochs({
      agents: recording,
      items: ITEMS5,
      formatters: formatters(2),
      sampler: counting,
      numGenerations: 2,
      reward: (c) => c[0]!.map((t, g) => t.length - c[1]![g]!.length),
      mode: "mean",
      normalize: false,
      numTrainEpochs: 2,
      trainBatchSize: 2,
      rolloutBufferSize: 4,
      shuffleRng: RngStream.fromSeed(5, "shuffle"),
      onBatch: (r) => void reports.push(r),
    });
    // 5 items: a full buffer of 4, then the remaining 1 drained; never a buffer across epochs
    expect(sampled).toEqual([4, 1, 4, 1]);
    expect(reports.map((r) => [r.epoch, r.batch, r.metrics["rl/updates"], r.jointEvaluations])).toEqual([
      [1, 1, 2, 8],
      [1, 2, 1, 2],
      [2, 1, 2, 8],
      [2, 2, 1, 2],
    ]);
    for (const a of agents) expect(new Set(Object.values(a.optimizer.getState().steps))).toEqual(new Set([6]));
    // The stream's draws, in order: epoch 1's item order, agent 0's and agent 1's shuffle of the
    // full buffer (the 1-item buffer draws nothing), then the same for epoch 2.
    const rng = RngStream.fromSeed(5, "shuffle");
    const expected: number[][][] = [[], []];
    for (let epoch = 0; epoch < 2; epoch++) {
      const order = rng.permutation(5);
      for (const i of [0, 1]) {
        const p = rng.permutation(4).map((k) => order[k]!);
        expected[i]!.push(p.slice(0, 2), p.slice(2, 4));
      }
      for (const i of [0, 1]) expected[i]!.push([order[4]!]);
    }
    for (const i of [0, 1]) expect(steps[i]!.map((s) => [...s].sort())).toEqual(expected[i]!.map((s) => [...s].sort()));
    // the two agents' buffers are shuffled independently
    expect(steps[0]!.slice(0, 2)).not.toEqual(steps[1]!.slice(0, 2));
  });
});

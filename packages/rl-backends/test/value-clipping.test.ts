// Value clipping across the mini-batches of a rollout buffer: every mini-batch clips against the
// values the critic predicted when the buffer was collected (V_old), not against values
// recomputed before it. With a clip range far below how far one update moves the values,
// clipping happens from the second mini-batch on; the runner must train exactly as the updates
// do by hand with collection-time V_old, and differently from fresh V_old.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import {
  ActorValueHead,
  actorCriticUpdate,
  actorCriticValues,
  collectRollouts,
  runActorCriticEpochs,
  type ActorCriticSetup,
  type BatchReport,
} from "../src/index.js";
import { copyAgents, disposeAgents, formatters, ITEMS, makeAgents, maxWeightDiff, sampler, type TestAgent } from "./helpers.js";

const STOPS = [2, 327, 346, 137];
const CLIP = 1e-6;
const reward = (c: string[][]) => c[0]!.map((t, g) => t.length / 4 - c[1]![g]!.length / 8);
const heads = () => [0, 1].map((i) => ActorValueHead.create({ hiddenSize: 64, hiddenDim: 8, rng: RngStream.fromSeed(40 + i, "h"), learningRate: 1e-3 }));
const OPTIONS = { criticType: "v", normalize: true, valueLossCoef: 0.6, valueClipRange: CLIP } as const;
type SharedSetup = Extract<ActorCriticSetup, { layout: "shared" }>;

describe("value clipping in a rollout buffer larger than the train batch", () => {
  let base: TestAgent[];
  beforeAll(async () => {
    base = await makeAgents(2, { stops: STOPS, padTokenId: 327 });
  });
  afterAll(() => disposeAgents(base));

  /** One buffer of all three items, three mini-batches of one item, updated by hand; `stale`: V_old from collection, else recomputed before each update. */
  async function byHand(stale: boolean): Promise<{ agents: TestAgent[]; setup: SharedSetup }> {
    const agents = copyAgents(base, { lr: 1e-3 });
    const setup: SharedSetup = { algorithm: "iac", layout: "shared", valueHeads: heads() };
    const order = RngStream.fromSeed(4, "shuffle").permutation(ITEMS.length);
    const rollouts = await collectRollouts({
      items: order.map((k) => ITEMS[k]!),
      itemIndices: order,
      formatters: formatters(2),
      sampler: sampler(agents, 31),
      numGenerations: 2,
      reward,
    });
    const old = actorCriticValues(agents, setup, rollouts, "v");
    for (let s = 0; s < rollouts.length; s++) {
      const part = rollouts.slice(s, s + 1);
      actorCriticUpdate(agents, setup, part, {
        ...OPTIONS,
        oldValues: stale ? old.map((a) => a.slice(s, s + 1)) : undefined,
        where: `epoch 1, batch 1, update ${s + 1}`,
      });
    }
    return { agents, setup };
  }

  it("clips against the values at collection, from the second mini-batch on", async () => {
    const agents = copyAgents(base, { lr: 1e-3 });
    const setup: SharedSetup = { algorithm: "iac", layout: "shared", valueHeads: heads() };
    const reports: BatchReport[] = [];
    await runActorCriticEpochs({
      ...OPTIONS,
      agents,
      setup,
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(agents, 31),
      numGenerations: 2,
      reward,
      numTrainEpochs: 1,
      trainBatchSize: 1,
      rolloutBufferSize: 3,
      shuffleRng: RngStream.fromSeed(4, "shuffle"),
      onBatch: (r) => void reports.push(r),
    });
    expect(reports.map((r) => r.metrics["rl/updates"])).toEqual([3]);
    // the first mini-batch cannot clip (V = V_old); later ones do, so the mean over the three is above 0
    expect(reports[0]!.metrics["critic/clip_fraction"]).toBeGreaterThan(0);

    const stale = await byHand(true);
    const fresh = await byHand(false);
    for (let i = 0; i < 2; i++) {
      expect(maxWeightDiff(agents[i]!.model, stale.agents[i]!.model)).toBe(0);
      expect(Array.from(setup.valueHeads[i]!.head.hostWeights().values()).map((t) => Array.from(t.data))).toEqual(
        Array.from(stale.setup.valueHeads[i]!.head.hostWeights().values()).map((t) => Array.from(t.data)),
      );
    }
    // recomputing V_old before each mini-batch would never clip, and trains differently
    expect(Math.max(...[0, 1].map((i) => maxWeightDiff(fresh.agents[i]!.model, stale.agents[i]!.model)))).toBeGreaterThan(0);
    for (const run of [{ agents, setup }, stale, fresh]) {
      disposeAgents(run.agents);
      run.setup.valueHeads.forEach((h) => h.dispose());
    }
  });
});

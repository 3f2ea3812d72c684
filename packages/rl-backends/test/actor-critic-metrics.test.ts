// The actor-critic updates report CoMLRL's metric names beside pbrl's own: the same numbers, so a
// dashboard built on CoMLRL's runs reads pbrl's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { ActorValueHead, Critic, actorCriticUpdate, collectRollouts, type ActorCriticSetup, type Rollout } from "../src/index.js";
import { copyAgents, disposeAgents, formatters, ITEMS, makeAgents, sampler, tinyLlama, type TestAgent } from "./helpers.js";

describe("CoMLRL's actor-critic metric names", () => {
  let base: TestAgent[];
  let batch: Rollout[];
  beforeAll(async () => {
    base = await makeAgents(2, { stops: [2, 327, 346, 137], padTokenId: 327 });
    batch = await collectRollouts({
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(base, 11),
      numGenerations: 2,
      reward: (_c, ctx) => [ctx.itemIndex, 1 - ctx.itemIndex],
    });
  });
  afterAll(() => disposeAgents(base));

  it.each(["maac", "iac"] as const)("%s: turn_1/policy_loss, turn_1/value_loss, turn_1/value_pred_mean, turn_1/value_target_mean", async (algorithm) => {
    const { model, tokenizer } = await tinyLlama();
    const agents = copyAgents(base, { lr: 1e-3 });
    const critic = (seed: number) => Critic.create({ backbone: model, tokenizer, rng: RngStream.fromSeed(seed, "c"), learningRate: 1e-3 });
    const made: { dispose: () => void }[] = [];
    let setup: ActorCriticSetup;
    if (algorithm === "maac") {
      const c = critic(1);
      made.push(c);
      setup = { algorithm, critic: c };
    } else {
      const heads = [0, 1].map((i) => ActorValueHead.create({ hiddenSize: 64, rng: RngStream.fromSeed(5 + i, "h"), learningRate: 1e-3 }));
      made.push(...heads);
      setup = { algorithm, layout: "shared", valueHeads: heads };
    }
    const m = actorCriticUpdate(agents, setup, batch, { criticType: "v", normalize: true, valueLossCoef: 0.6, valueClipRange: 0.2, where: "b" });
    expect(m["turn_1/policy_loss"]).toBeCloseTo((m["agent_0/loss"]! + m["agent_1/loss"]!) / 2, 12);
    expect(m["turn_1/value_loss"]).toBe(m["critic/value_loss"]);
    expect(m["turn_1/value_pred_mean"]).toBeCloseTo((m["agent_0/value_mean"]! + m["agent_1/value_mean"]!) / 2, 12);
    expect(m["turn_1/value_target_mean"]).toBe(m["critic/target_mean"]);
    expect(m["turn_1/value_loss"]).toBeGreaterThan(0);
    made.forEach((x) => x.dispose());
    disposeAgents(agents);
  });
});

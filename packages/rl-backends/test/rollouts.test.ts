import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { generate } from "@pbrl/models";
import { RewardError, type RewardContext } from "@pbrl/preference-data";
import { collectRollouts } from "../src/index.js";
import { disposeAgents, formatters, ITEMS, makeAgents, sampler, type TestAgent } from "./helpers.js";

describe("collectRollouts", () => {
  let agents: TestAgent[];
  beforeAll(async () => {
    // Stop ids include EOS and frequent tokens of the random model, so lengths vary.
    agents = await makeAgents(2, { stops: [2, 327, 346, 137] });
  });
  afterAll(() => disposeAgents(agents));

  it("samples G responses per agent, joins them by index and records the G joint returns", async () => {
    const calls: { completions: string[][]; context: RewardContext }[] = [];
    const rollouts = await collectRollouts({
      items: ITEMS,
      formatters: formatters(2),
      sampler: sampler(agents, 3),
      numGenerations: 4,
      reward: (completions, context) => {
        calls.push({ completions, context });
        return completions[0]!.map((c, g) => c.length + 10 * g + 100 * context.itemIndex);
      },
    });
    expect(rollouts.map((r) => r.itemIndex)).toEqual([0, 1, 2]);
    for (const [k, r] of rollouts.entries()) {
      expect(r.item).toBe(ITEMS[k]);
      expect(r.prompts).toEqual([`Agent 1: ${ITEMS[k]!.prompt}`, `Agent 2: ${ITEMS[k]!.prompt}`]);
      expect(r.promptIds).toEqual(r.prompts.map((p) => agents[0]!.tokenizer.encode(p)));
      expect(r.tokens.map((t) => t.length)).toEqual([4, 4]);
      expect(r.texts).toEqual(r.tokens.map((perAgent) => perAgent.map((t) => agents[0]!.tokenizer.decode(t))));
      // The reward saw exactly these texts, one call per item, with the item's context.
      expect(calls[k]!.completions).toEqual(r.texts);
      expect(calls[k]!.context).toEqual({ item: ITEMS[k], itemIndex: k, prompts: r.prompts });
      expect(r.rewards).toEqual(r.texts[0]!.map((c, g) => c.length + 10 * g + 100 * k));
      expect(r.returns).toEqual(r.rewards);
    }
    // Tokens are exactly what generation produced: a row that stopped ends with its stop id,
    // a row that did not has max_new_tokens tokens.
    const all = rollouts.flatMap((r) => r.tokens.flat());
    expect(all.every((t) => t.length === 6 || [2, 327, 346, 137].includes(t.at(-1)!))).toBe(true);
    expect(all.some((t) => t.length < 6)).toBe(true);
    expect(new Set(all.map((t) => t.length)).size).toBeGreaterThan(1);
  });

  it("matches a direct generate call with the agent's stream (EOS kept, nothing trimmed or padded)", async () => {
    const r = await collectRollouts({
      items: ITEMS.slice(0, 1),
      formatters: formatters(1),
      sampler: sampler(agents.slice(0, 1), 9),
      numGenerations: 5,
      reward: (c) => c[0]!.map(() => 0),
    });
    const direct = generate(agents[0]!.model, [r[0]!.promptIds[0]!], {
      maxNewTokens: 6,
      temperature: 1,
      topP: 1,
      topK: 0,
      numReturnSequences: 5,
      eosTokenIds: [2, 327, 346, 137],
      padTokenId: 0,
      rng: RngStream.fromSeed(9, "policy").split(), // the sampler splits one stream per agent
    });
    expect(r[0]!.tokens[0]).toEqual(direct.map((d) => d.tokens));
  });

  it("accepts an async reward, keeps item order under concurrency, applies a reward processor, uses the given item indices", async () => {
    const rollouts = await collectRollouts({
      items: ITEMS,
      itemIndices: [7, 3, 5],
      formatters: formatters(2),
      sampler: sampler(agents, 4),
      numGenerations: 2,
      concurrency: 3,
      reward: async (_c, ctx) => {
        await new Promise((res) => setTimeout(res, ctx.itemIndex === 7 ? 30 : 1)); // the first item finishes last
        return [ctx.itemIndex, ctx.itemIndex + 0.5];
      },
      rewardProcessor: (x) => 2 * x,
    });
    expect(rollouts.map((r) => r.itemIndex)).toEqual([7, 3, 5]);
    expect(rollouts.map((r) => r.rewards)).toEqual([
      [14, 15],
      [6, 7],
      [10, 11],
    ]);
  });

  it("a non-finite or mis-sized reward is an error naming the item", async () => {
    const base = { items: ITEMS, itemIndices: [0, 1, 2], formatters: formatters(2), sampler: sampler(agents, 5), numGenerations: 2 };
    await expect(collectRollouts({ ...base, reward: (_c, ctx) => (ctx.itemIndex === 1 ? [1, NaN] : [1, 2]) })).rejects.toThrow(RewardError);
    await expect(collectRollouts({ ...base, reward: (_c, ctx) => (ctx.itemIndex === 1 ? [1, NaN] : [1, 2]) })).rejects.toThrow(
      /NaN for candidate 1 of item 1 \(id "b"\)/,
    );
    await expect(collectRollouts({ ...base, reward: () => [1] })).rejects.toThrow(/returned 1 value\(s\) on item 0 .*expected 2/);
    await expect(
      collectRollouts({
        ...base,
        reward: () => {
          throw new Error("judge down");
        },
      }),
    ).rejects.toThrow(/threw on item 0.*judge down/);
    await expect(collectRollouts({ ...base, numGenerations: 0, reward: () => [] })).rejects.toThrow(/num_generations/);
  });

  it("leaves no tensors behind", async () => {
    const run = () =>
      collectRollouts({ items: ITEMS, formatters: formatters(2), sampler: sampler(agents, 6), numGenerations: 3, reward: (c) => c[0]!.map(() => 1) });
    await run();
    const n = liveTensorCount();
    await run();
    expect(liveTensorCount()).toBe(n);
  });
});

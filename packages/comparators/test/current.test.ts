import { describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { PolicySampler, type Policy } from "@pbrl/preference-data";
import { CurrentComparator, CurrentCopyComparator } from "../src/index.js";
import { GEN, ITEMS, loadAgent, OTHER_DEVICE, perturb, PROMPTS, QWEN } from "./agents.js";

async function twoAgents(): Promise<Policy[]> {
  return [await loadAgent(), await loadAgent(QWEN)];
}

const tokensOf = (samples: ReturnType<PolicySampler["sample"]>) => samples.map((item) => item.map((a) => a.tokens));

describe("CurrentComparator", () => {
  it("samples the live agents from its own stream, leaving the policy stream untouched", async () => {
    const agents = await twoAgents();
    const comparatorRng = RngStream.fromSeed(5, "comparator");
    const expected = new PolicySampler(agents, GEN, RngStream.fromState(comparatorRng.getState())).sample(PROMPTS, 3);
    const comparator = new CurrentComparator({ agents, generation: GEN, rng: comparatorRng });
    expect(comparator.description).toBe("current");

    const policy = new PolicySampler(agents, GEN, RngStream.fromSeed(5, "policy"));
    const untouched = new PolicySampler(agents, GEN, RngStream.fromSeed(5, "policy"));
    const first = policy.sample(PROMPTS, 2);
    expect(first).toEqual(untouched.sample(PROMPTS, 2));

    await comparator.beginRound(1);
    const sets = await comparator.sample(ITEMS, PROMPTS, 3);
    await comparator.endRound();
    // the policy's next draws are what they would have been without the comparator in between
    expect(policy.sample(PROMPTS, 2)).toEqual(untouched.sample(PROMPTS, 2));

    expect(sets.map((s) => s.tokens)).toEqual(tokensOf(expected));
    expect(sets.map((s) => s.texts)).toEqual(expected.map((item) => item.map((a) => a.texts)));
    expect(sets.every((s) => s.valid.length === 3 && s.valid.every((v) => v))).toBe(true);
    // a different stream than the policy's: the same call on the policy stream answers otherwise
    expect(tokensOf(expected)).not.toEqual(tokensOf(new PolicySampler(agents, GEN, RngStream.fromSeed(5, "policy")).sample(PROMPTS, 3)));
    // stopped iff the last id is one of the agent's stop ids
    sets.forEach((s) =>
      s.stopped!.forEach((perAgent, a) => perAgent.forEach((stop, j) => expect(stop).toBe(agents[a]!.eosTokenIds.includes(s.tokens![a]![j]!.at(-1)!)))),
    );
    // each agent's ids decode to its texts with its own tokenizer
    sets.forEach((s) => s.tokens!.forEach((perAgent, a) => perAgent.forEach((ids, j) => expect(agents[a]!.tokenizer.decode(ids)).toBe(s.texts[a]![j]))));
    comparator.dispose();
    agents.forEach((a) => a.model.dispose());
  });
});

describe("CurrentCopyComparator", () => {
  it.skipIf(OTHER_DEVICE === undefined)(
    "samples frozen round-start copies when its devices differ, unaffected by live updates, and frees them at endRound",
    async () => {
      const agents = await twoAgents();
      const roundStart = agents.map((a) => ({ ...a, model: a.model.clone() }));
      const rng = RngStream.fromSeed(9, "comparator");
      const comparator = new CurrentCopyComparator({ agents, generation: GEN, rng, devices: OTHER_DEVICE!, agentDevices: null });
      expect(comparator.description).toBe("current_copy (frozen copies)");
      const before = liveTensorCount();

      await comparator.beginRound(1);
      expect(liveTensorCount()).toBeGreaterThan(before); // the copies
      agents.forEach((a, i) => perturb(a.model, 100 + i)); // the trainer moves the live weights mid-round
      const state = rng.getState();
      const sets = await comparator.sample(ITEMS, PROMPTS, 3);
      const fromStart = new PolicySampler(roundStart, GEN, RngStream.fromState(state)).sample(PROMPTS, 3);
      const fromLive = new PolicySampler(agents, GEN, RngStream.fromState(state)).sample(PROMPTS, 3);
      expect(sets.map((s) => s.tokens)).toEqual(tokensOf(fromStart));
      expect(tokensOf(fromLive)).not.toEqual(tokensOf(fromStart));

      await comparator.endRound();
      expect(liveTensorCount()).toBe(before);
      await expect(comparator.sample(ITEMS, PROMPTS, 1)).rejects.toThrow(/outside a round; call beginRound first/);

      // the next round copies the weights as they are then
      await comparator.beginRound(2);
      const state2 = rng.getState();
      const round2 = await comparator.sample(ITEMS, PROMPTS, 2);
      expect(round2.map((s) => s.tokens)).toEqual(tokensOf(new PolicySampler(agents, GEN, RngStream.fromState(state2)).sample(PROMPTS, 2)));
      comparator.dispose();
      expect(liveTensorCount()).toBe(before);
      [...agents, ...roundStart].forEach((a) => a.model.dispose());
    },
  );

  it("uses the live agents, like current, when the devices are equal or unspecified", async () => {
    const agents = await twoAgents();
    for (const [devices, agentDevices] of [
      [null, null],
      ["cpu", ["cpu"]],
      [null, ["gpu:1", "gpu:1"]],
    ] as const) {
      const rng = RngStream.fromSeed(3, "comparator");
      const comparator = new CurrentCopyComparator({ agents, generation: GEN, rng, devices, agentDevices });
      expect(comparator.description).toBe("current_copy (live agents: same devices)");
      const before = liveTensorCount();
      await comparator.beginRound(1);
      expect(liveTensorCount()).toBe(before); // nothing copied
      const state = rng.getState();
      const sets = await comparator.sample(ITEMS, PROMPTS, 2);
      expect(sets.map((s) => s.tokens)).toEqual(tokensOf(new PolicySampler(agents, GEN, RngStream.fromState(state)).sample(PROMPTS, 2)));
      await comparator.endRound();
      comparator.dispose();
    }
    expect(() => new CurrentCopyComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1), devices: ["a", "b", "c"] })).toThrow(
      /comparator_devices: has 3 entries; give one device or 2/,
    );
    agents.forEach((a) => a.model.dispose());
  });
});

// RoundCopies on its own: its checks and descriptions, and that every copy it makes is freed,
// also when a second round begins without the first ending and when copying fails midway. Real
// tiny checkpoints.
import { describe, expect, it } from "vitest";
import { liveTensorCount } from "@pbrl/core-tensor";
import { RoundCopies } from "../src/index.js";
import { loadAgent } from "./agents.js";

describe("RoundCopies", () => {
  it("needs one device per agent and describes whether it copies", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    expect(() => new RoundCopies(agents, true, ["cpu"])).toThrow(new RangeError("current_copy comparator: 1 devices for 2 agents"));
    expect(() => new RoundCopies(agents, true, ["cpu", "cpu", "cpu"])).toThrow(new RangeError("current_copy comparator: 3 devices for 2 agents"));
    expect(new RoundCopies(agents, true, ["cpu", "cpu"]).description).toBe("frozen copies of the agents made at round start");
    expect(new RoundCopies(agents, false).description).toBe("live agents (comparator devices equal the agents')");
    const live = new RoundCopies(agents, false);
    await live.beginRound();
    expect(live.policies().map((p) => [p.model, p.sharesAgentVocabulary])).toEqual(agents.map((a) => [a.model, true]));
    agents.forEach((a) => a.model.dispose());
  });

  it("frees the copies of a round that begins again before ending, and those made before a copy fails", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    const before = liveTensorCount();
    const copies = new RoundCopies(agents, true);
    await copies.beginRound();
    const held = liveTensorCount();
    expect(held).toBeGreaterThan(before);
    await copies.beginRound();
    expect(liveTensorCount()).toBe(held);
    copies.dispose();
    expect(liveTensorCount()).toBe(before);

    agents[1]!.model.dispose(); // agent 0 is copied, then copying agent 1 fails
    const failing = new RoundCopies(agents, true);
    const afterDispose = liveTensorCount();
    await expect(failing.beginRound()).rejects.toThrow();
    expect(liveTensorCount()).toBe(afterDispose);
    expect(() => failing.policies()).toThrow(new Error("current_copy comparator: sample() called outside a round; call beginRound first"));
    agents[0]!.model.dispose();
  });
});

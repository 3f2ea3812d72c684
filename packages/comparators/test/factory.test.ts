import { mkdtemp, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, savePretrained, type Pretrained } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
import {
  CentralizedComparator,
  createComparator,
  CurrentComparator,
  CurrentCopyComparator,
  HistoryComparator,
  ModelComparator,
  type ComparatorOptions,
} from "../src/index.js";
import { GEN, ITEMS, LLAMA, loadAgent, OTHER_DEVICE, PROMPTS, ShortTaggedAdapter } from "./agents.js";

let tmp: string;
let agents: Policy[];
let others: Pretrained[];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-factory-"));
  agents = [await loadAgent(), await loadAgent()];
  others = [await loadPretrained(LLAMA), await loadPretrained(LLAMA)];
  // a history folder holding only agent 1's weights: the centralized generator needs no more
  await savePretrained(path.join(tmp, "round_1", "agent_1"), others[1]!);
});
afterAll(async () => {
  [...agents.map((a) => a.model), ...others.map((o) => o.model)].forEach((m) => m.dispose());
  await rm(tmp, { recursive: true, force: true });
});

const base = (): ComparatorOptions => ({ policy: "current", agents, generation: GEN, rng: RngStream.fromSeed(1, "comparator") });

describe("createComparator", () => {
  it("builds each decentralized source", () => {
    const current = createComparator(base());
    expect(current).toBeInstanceOf(CurrentComparator);
    const copy = createComparator({ ...base(), policy: "current_copy", devices: ["cpu", "other"] });
    expect(copy).toBeInstanceOf(CurrentCopyComparator);
    expect(copy.description).toBe("current_copy (frozen copies)");
    expect(createComparator({ ...base(), policy: "model", modelName: LLAMA })).toBeInstanceOf(ModelComparator);
    const history = createComparator({ ...base(), policy: "history", historyK: 3, weightsAt: () => tmp });
    expect(history).toBeInstanceOf(HistoryComparator);
    expect(history.description).toBe("history (k=3)");
    expect(createComparator({ ...base(), policy: "history", weightsAt: () => tmp }).description).toBe("history (k=1)");
  });

  it("refuses what this package does not provide or cannot build", () => {
    expect(() => createComparator({ ...base(), policy: "api" })).toThrow(/comparator_policy="api" is not available in @pbrl\/comparators/);
    expect(() => createComparator({ ...base(), policy: "history" })).toThrow(/needs weightsAt/);
    expect(() => createComparator({ ...base(), generationMode: "centralized", centralizedAgentIndex: 2 })).toThrow(
      /comparator_centralized_agent_index: agent index 2 is out of range; there are 2 agents/,
    );
    expect(() =>
      createComparator({
        ...base(),
        policy: "model",
        generationMode: "centralized",
        comparatorAgents: [LLAMA, LLAMA],
        centralizedAgentIndex: 1,
        agents: [...agents, agents[0]!],
      }),
    ).not.toThrow();
    expect(() =>
      createComparator({
        ...base(),
        policy: "model",
        generationMode: "centralized",
        comparatorAgents: [LLAMA, LLAMA],
        centralizedAgentIndex: 2,
        agents: [...agents, agents[0]!],
      }),
    ).toThrow(/comparator_agents: has 2 entries and no entry 2/);
  });

  it("centralized current uses the agent at the centralized index", async () => {
    const c = createComparator({ ...base(), generationMode: "centralized", centralizedAgentIndex: 1 }) as CentralizedComparator;
    expect(c).toBeInstanceOf(CentralizedComparator);
    expect(c.description).toBe("centralized current (agent 1 writes every role)");
    expect(c.generator.policies()[0]!.model).toBe(agents[1]!.model);
  });

  it.skipIf(OTHER_DEVICE === undefined)("centralized current_copy copies only the generator, and only when its device differs", async () => {
    const before = liveTensorCount();
    const same = createComparator({
      ...base(),
      policy: "current_copy",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      devices: [OTHER_DEVICE!, "cpu"],
      agentDevices: "cpu",
    }) as CentralizedComparator;
    await same.beginRound(1);
    expect(liveTensorCount()).toBe(before);
    expect(same.generator.policies()[0]!.model).toBe(agents[1]!.model);
    await same.endRound();
    const moved = createComparator({
      ...base(),
      policy: "current_copy",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      devices: ["cpu", OTHER_DEVICE!],
      agentDevices: "cpu",
    }) as CentralizedComparator;
    await moved.beginRound(1);
    expect(liveTensorCount() - before).toBe(agents[1]!.model.params.size); // one model's variables
    await moved.endRound();
    expect(liveTensorCount()).toBe(before);
  });

  it("centralized model takes comparator_agents' entry at the centralized index", async () => {
    const c = createComparator({
      ...base(),
      policy: "model",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      comparatorAgents: others,
    }) as CentralizedComparator;
    await c.beginRound(1);
    expect(c.generator.policies()[0]!.model).toBe(others[1]!.model);
    const one = createComparator({
      ...base(),
      policy: "model",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      comparatorAgents: [others[0]!],
    }) as CentralizedComparator;
    await one.beginRound(1);
    expect(one.generator.policies()[0]!.model).toBe(others[0]!.model);
    c.dispose();
    one.dispose();
  });

  it("centralized history loads only the generator's checkpoint, once per round, and frees it", async () => {
    const calls: number[] = [];
    const c = createComparator({
      ...base(),
      policy: "history",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      historyK: 2,
      adapter: new ShortTaggedAdapter(),
      weightsAt: (round) => (calls.push(round), path.join(tmp, `round_${round}`)),
    });
    expect(c.description).toBe("centralized history (k=2) (agent 1 writes every role)");
    const before = liveTensorCount();
    await c.beginRound(2);
    const sets = await c.sample(ITEMS, PROMPTS, 2);
    expect(sets).toHaveLength(2);
    expect(sets[0]!.texts).toHaveLength(2); // one list per role
    await c.endRound();
    expect(liveTensorCount()).toBe(before);
    expect(calls).toEqual([1]);
    c.dispose();
  });
});

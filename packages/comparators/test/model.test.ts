import { mkdtemp, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, savePretrained } from "@pbrl/models";
import { PolicySampler } from "@pbrl/preference-data";
import { ModelComparator, VocabularyMismatchError } from "../src/index.js";
import { GEN, ITEMS, LLAMA, LLAMA_BF16, loadAgent, perturb, PROMPTS, QWEN } from "./agents.js";

let tmp: string;
/** A checkpoint folder with other weights than the agents' and the same tokenizer. */
let OTHER: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-model-comparator-"));
  OTHER = path.join(tmp, "other-llama");
  const p = await loadPretrained(LLAMA);
  perturb(p.model, 42);
  await savePretrained(OTHER, p);
  p.model.dispose();
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

describe("ModelComparator", () => {
  it("loads comparator_model_name once for every agent and every round, sampling it with the agents' tokenizers", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    const reference = await loadPretrained(OTHER);
    const rng = RngStream.fromSeed(11, "comparator");
    const before = liveTensorCount();
    const comparator = new ModelComparator({ agents, generation: GEN, rng, modelName: OTHER });
    expect(comparator.description).toBe(`model (${OTHER})`);
    expect(liveTensorCount()).toBe(before); // nothing loaded before the first round

    await comparator.beginRound(1);
    const loaded = comparator.source.policies().map((p) => p.model);
    expect(loaded[0]).toBe(loaded[1]); // one source, one frozen model
    expect(loaded[0]).not.toBe(agents[0]!.model);
    const state = rng.getState();
    const sets = await comparator.sample(ITEMS, PROMPTS, 2);
    await comparator.endRound();
    const direct = new PolicySampler(
      agents.map((a) => ({ ...a, model: reference.model })),
      GEN,
      RngStream.fromState(state),
    ).sample(PROMPTS, 2);
    expect(sets.map((s) => s.tokens)).toEqual(direct.map((item) => item.map((a) => a.tokens)));
    expect(sets.map((s) => s.texts)).toEqual(direct.map((item) => item.map((a) => a.texts)));
    const agentsThemselves = new PolicySampler(agents, GEN, RngStream.fromState(state)).sample(PROMPTS, 2);
    expect(sets.map((s) => s.tokens)).not.toEqual(agentsThemselves.map((item) => item.map((a) => a.tokens)));

    await comparator.beginRound(2);
    expect(comparator.source.policies()[0]!.model).toBe(loaded[0]); // not reloaded
    await comparator.endRound();
    comparator.dispose();
    expect(liveTensorCount()).toBe(before);
    reference.model.dispose();
    agents.forEach((a) => a.model.dispose());
  });

  it("takes one source per agent from comparator_agents, and leaves models passed as objects to the caller", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    const given = await loadPretrained(LLAMA_BF16);
    const before = liveTensorCount();
    const comparator = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), comparatorAgents: [LLAMA_BF16, given] });
    expect(liveTensorCount()).toBeGreaterThan(before); // loaded up front
    const models = comparator.source.policies().map((p) => p.model);
    expect(models[1]).toBe(given.model);
    expect(models[0]).not.toBe(given.model);
    await comparator.beginRound(1);
    expect(comparator.source.policies()[0]!.model).toBe(models[0]);
    const [set] = await comparator.sample(ITEMS.slice(0, 1), PROMPTS.slice(0, 1), 2);
    expect(set!.texts).toHaveLength(2);
    await comparator.endRound();
    comparator.dispose();
    expect(liveTensorCount()).toBe(before);
    expect(given.model.params.get("model.norm.weight")!.isDisposed).toBe(false);
    given.model.dispose();
    expect(() => new ModelComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1), comparatorAgents: [LLAMA_BF16] })).toThrow(
      /comparator_agents: has 1 entries; give one per agent \(2\)/,
    );
    expect(() => new ModelComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1) })).toThrow(/needs comparator_model_name or comparator_agents/);
    agents.forEach((a) => a.model.dispose());
  });

  it("rejects a comparator whose tokenizer differs from the agent's, freeing what it loaded", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    const before = liveTensorCount();
    const comparator = new ModelComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1), comparatorAgents: [LLAMA_BF16, QWEN] });
    const err = await comparator.beginRound(1).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(VocabularyMismatchError);
    expect((err as Error).message).toMatch(/tiny-qwen2 for agent 1: its tokenizer differs from the agent's/);
    expect(liveTensorCount()).toBe(before);
    await expect(comparator.sample(ITEMS, PROMPTS, 1)).rejects.toThrow(/call beginRound first/);
    comparator.dispose();
    agents.forEach((a) => a.model.dispose());
  });

  it("load() rejects with the loading error when a model cannot be loaded, holding nothing", async () => {
    const agents = [await loadAgent(), await loadAgent()];
    const before = liveTensorCount();
    const missing = path.join(tmp, "no-such-model");
    const err = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), comparatorAgents: [LLAMA, missing] }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain("no-such-model");
    expect(liveTensorCount()).toBe(before);
    agents.forEach((a) => a.model.dispose());
  });

  it("accepts a bare CausalLM of the same vocabulary size, which has no tokenizer to check", async () => {
    const agents = [await loadAgent()];
    const bare = (await loadPretrained(LLAMA_BF16)).model;
    const comparator = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), modelName: bare });
    expect(comparator.description).toBe("model (a model object)");
    await comparator.beginRound(1);
    const [set] = await comparator.sample([{}], [["Hello"]], 2);
    expect(set!.tokens).toBeDefined();
    comparator.dispose();
    bare.dispose();
    agents.forEach((a) => a.model.dispose());
  });
});

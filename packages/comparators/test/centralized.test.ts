import { describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { generate } from "@pbrl/models";
import { CentralizedParseError, type CentralizedAdapter, type Policy, type TaskItem } from "@pbrl/preference-data";
import { CentralizedComparator, LiveAgents, RoundCopies, TaggedCentralizedAdapter } from "../src/index.js";
import { GEN, ITEMS, loadAgent, perturb, PROMPTS, ShortTaggedAdapter } from "./agents.js";

/** The tagged adapter's parsing (with a joint prompt that fits the tiny model), recording the completions it was given. */
class RecordingAdapter implements CentralizedAdapter {
  readonly seen: string[] = [];
  private readonly tagged = new ShortTaggedAdapter();
  buildPrompt(item: TaskItem, prompts: readonly string[]): string {
    return this.tagged.buildPrompt(item, prompts);
  }
  parseCompletion(completion: string, item: TaskItem, numAgents: number): string[] {
    this.seen.push(completion);
    return this.tagged.parseCompletion(completion, item, numAgents);
  }
}

/** Reads completions of even length as valid (each role gets a slice); odd ones fail to parse. */
class EvenLengthAdapter implements CentralizedAdapter {
  buildPrompt(_item: TaskItem, prompts: readonly string[]): string {
    return `Answer all of: ${prompts.join(" | ")}`;
  }
  parseCompletion(completion: string, _item: TaskItem, numAgents: number): string[] {
    if (completion.length % 2 === 1) throw new CentralizedParseError("odd");
    return Array.from({ length: numAgents }, (_, a) => `${a}:${completion}`);
  }
}

/** What the generator gives for the joint prompts from a given stream state. */
function directJoint(policy: Policy, adapter: CentralizedAdapter, state: ReturnType<RngStream["getState"]>, n: number, maxNewTokens = GEN.maxNewTokens) {
  const ids = ITEMS.map((item, k) => policy.tokenizer.encode(adapter.buildPrompt(item, PROMPTS[k]!)));
  return generate(policy.model, ids, {
    maxNewTokens,
    temperature: GEN.temperature,
    topP: GEN.topP,
    numReturnSequences: n,
    eosTokenIds: policy.eosTokenIds,
    padTokenId: policy.padTokenId,
    rng: RngStream.fromState(state),
  });
}

describe("CentralizedComparator", () => {
  it("makes unparseable joint completions invalid candidates instead of failing", async () => {
    const agent = await loadAgent();
    const rng = RngStream.fromSeed(4, "comparator");
    const adapter = new EvenLengthAdapter();
    const comparator = new CentralizedComparator({ generator: new LiveAgents([agent]), adapter, generation: { ...GEN, maxNewTokens: 8 }, rng });
    const state = rng.getState();
    await comparator.beginRound(1);
    const sets = await comparator.sample(ITEMS, PROMPTS, 6);
    await comparator.endRound();
    const rows = directJoint(agent, adapter, state, 6, 8);
    const valid = sets.flatMap((s) => s.valid);
    expect(valid).toContain(true);
    expect(valid).toContain(false);
    expect(sets.flatMap((s) => s.stopped![0]!)).toContain(true); // this seed has a valid candidate that stopped
    sets.forEach((set, k) => {
      expect(set.tokens).toBeUndefined(); // role texts are re-tokenized per agent
      set.valid.forEach((ok, j) => {
        const row = rows[k * 6 + j]!;
        const text = agent.tokenizer.decode(row.tokens);
        expect(ok).toBe(text.length % 2 === 0);
        expect(set.texts.map((t) => t[j])).toEqual(ok ? [`0:${text}`, `1:${text}`] : ["", ""]);
        expect(set.stopped!.map((s) => s[j])).toEqual([ok && row.finishReason === "stop", ok && row.finishReason === "stop"]);
      });
    });
    comparator.dispose();
    agent.model.dispose();
  });

  it("prompts the generator with the tagged joint prompt and splits its completions", async () => {
    const agent = await loadAgent();
    const rng = RngStream.fromSeed(8, "comparator");
    const adapter = new RecordingAdapter();
    const comparator = new CentralizedComparator({ generator: new LiveAgents([agent]), adapter, generation: GEN, rng });
    const state = rng.getState();
    const sets = await comparator.sample(ITEMS, PROMPTS, 3);
    const direct = directJoint(agent, adapter, state, 3);
    expect(adapter.seen).toEqual(direct.map((r) => agent.tokenizer.decode(r.tokens)));
    // an untrained tiny model writes no <agent_i> sections: every candidate is invalid, nothing throws
    expect(sets.map((s) => s.valid)).toEqual([
      [false, false, false],
      [false, false, false],
    ]);
    expect(sets[0]!.texts).toEqual([
      ["", "", ""],
      ["", "", ""],
    ]);
    comparator.dispose();
    agent.model.dispose();
  });

  it("samples a round-start copy of the generator, freed at endRound", async () => {
    const agent = await loadAgent();
    const start = { ...agent, model: agent.model.clone() };
    const rng = RngStream.fromSeed(2, "comparator");
    const adapter = new RecordingAdapter();
    const comparator = new CentralizedComparator({ generator: new RoundCopies([agent], true), adapter, generation: GEN, rng });
    const before = liveTensorCount();
    await comparator.beginRound(1);
    perturb(agent.model, 5);
    const state = rng.getState();
    await comparator.sample(ITEMS, PROMPTS, 2);
    expect(adapter.seen).toEqual(directJoint(start, adapter, state, 2).map((r) => agent.tokenizer.decode(r.tokens)));
    await comparator.endRound();
    expect(liveTensorCount()).toBe(before);
    comparator.dispose();
    agent.model.dispose();
    start.model.dispose();
  });

  it("rejects an empty joint prompt and a generator serving several policies", async () => {
    const agent = await loadAgent();
    const empty: CentralizedAdapter = { buildPrompt: () => "  ", parseCompletion: () => [] };
    const c1 = new CentralizedComparator({ generator: new LiveAgents([agent]), adapter: empty, generation: GEN, rng: RngStream.fromSeed(1) });
    await expect(c1.sample(ITEMS, PROMPTS, 1)).rejects.toThrow(/empty joint prompt for item 0/);
    const c2 = new CentralizedComparator({
      generator: new LiveAgents([agent, agent]),
      adapter: new TaggedCentralizedAdapter(),
      generation: GEN,
      rng: RngStream.fromSeed(1),
    });
    await expect(c2.sample(ITEMS, PROMPTS, 1)).rejects.toThrow(/serves 2 policies; centralized generation needs exactly one/);
    agent.model.dispose();
  });
});

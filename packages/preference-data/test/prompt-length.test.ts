// Issue 17 (d): prompts against the model's context (tiny Llama: max_position_embeddings=256).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type Pretrained } from "@pbrl/models";
import {
  collectPreferencePairs,
  fitPromptIds,
  pairTokensFromRecord,
  PolicySampler,
  PromptTooLongError,
  resolveFormatters,
  sampleAgentRows,
  type GenerationSettings,
  type Policy,
  type RewardFunc,
} from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

let loaded: Pretrained;
let policy: Policy;
const LONG = "The cat sat on the mat and looked at the river. ".repeat(12); // 277 tokens with BOS
const settings: GenerationSettings = { maxNewTokens: 6, temperature: 1.2, topP: 1, topK: null, maxBatchRows: 8 };
const byLength: RewardFunc = (c) => c[0]!.map((s, j) => s.length + c[1]![j]!.length);

beforeAll(async () => {
  loaded = await loadPretrained(TINY_LLAMA);
  policy = { model: loaded.model, tokenizer: loaded.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
});
afterAll(() => loaded.model.dispose());

function collect(maxPromptLength: number | null, onWarning?: (m: string) => void) {
  return collectPreferencePairs({
    items: [{ prompt: "The cat" }, { id: "long", prompt: LONG }],
    formatters: resolveFormatters(undefined, 2),
    sampler: new PolicySampler([policy, policy], { ...settings, maxPromptLength }, RngStream.fromSeed(0, "policy")),
    rewardFunc: byLength,
    numCandidates: 4,
    pairSelection: "reward_gap",
    pairsPerSample: 2,
    selectionRng: RngStream.fromSeed(0, "sel"),
    rewardConcurrency: 2,
    itemsPerBatch: 1,
    onWarning,
  });
}

describe("max_prompt_length unset: a prompt that leaves no room for max_new_tokens", () => {
  it("is a PromptTooLongError naming the item, the agent, both lengths and the fix", async () => {
    expect(policy.tokenizer.encode(LONG)).toHaveLength(277);
    const err = await collect(null).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PromptTooLongError);
    expect(err).toMatchObject({ itemIndex: 1, agent: 0, promptTokens: 277, maxPositionEmbeddings: 256 });
    expect((err as Error).message).toBe(
      "item 1: agent 0's prompt is 277 tokens; with max_new_tokens=6 it exceeds the model's context (max_position_embeddings=256); set max_prompt_length (at most 250 with max_new_tokens=6) to cut long prompts from the left, shorten the prompt (its formatter), or lower max_new_tokens",
    );
  });

  it("fits exactly up to the context: prompt + max_new_tokens = max_position_embeddings is allowed", () => {
    const where = { itemIndex: 0, agent: 0, itemName: "item 0" };
    expect(fitPromptIds(new Array<number>(250).fill(5), { maxNewTokens: 6, maxPositionEmbeddings: 256 }, where).ids).toHaveLength(250);
    expect(() => fitPromptIds(new Array<number>(251).fill(5), { maxNewTokens: 6, maxPositionEmbeddings: 256 }, where)).toThrow(PromptTooLongError);
    // A cut that still does not fit says to lower the cut.
    expect(() => fitPromptIds(new Array<number>(300).fill(5), { maxPromptLength: 252, maxNewTokens: 6, maxPositionEmbeddings: 256 }, where)).toThrow(
      /is 252 tokens \(cut from 300 by max_prompt_length=252\).*lower max_prompt_length to at most 250/,
    );
  });
});

describe("max_prompt_length set", () => {
  it("cuts long prompts from the left, generates from the cut prompt, stores it in the pairs, and warns once with the count", async () => {
    const warnings: string[] = [];
    const r = await collect(16, (m) => warnings.push(m));
    const cut = policy.tokenizer.encode(LONG).slice(-16);
    expect(warnings).toEqual([
      "max_prompt_length=16: 2 of 4 agent prompts were longer (up to 277 tokens) and were cut from the left to their last 16 tokens; the agents generated from, and the pairs store, the cut prompts. Raise max_prompt_length or shorten the prompts to keep them whole.",
    ]);
    const long = r.pairs.filter((p) => p.itemIndex === 1);
    expect(long.length).toBeGreaterThan(0);
    for (const pair of long) {
      expect(pair.record.prompt_token_ids).toEqual([cut, cut]);
      expect(pair.tokens.map((t) => t.promptIds)).toEqual([cut, cut]);
      expect(pairTokensFromRecord(pair.record, [policy, policy])).toEqual(pair.tokens);
    }
    // Short prompts are untouched.
    const short = r.pairs.find((p) => p.itemIndex === 0)!;
    expect(short.tokens[0]!.promptIds).toEqual(policy.tokenizer.encode("The cat"));
  });

  it("the sampler generates exactly what generation from the cut ids gives", () => {
    const samples = new PolicySampler([policy], { ...settings, maxPromptLength: 16 }, RngStream.fromSeed(4, "policy")).sample([[LONG]], 3, [7]);
    const cut = policy.tokenizer.encode(LONG).slice(-16);
    expect(samples[0]![0]!).toMatchObject({ promptIds: cut, truncatedFrom: 277 });
    const direct = sampleAgentRows(policy, [cut], 3, settings, RngStream.fromSeed(4, "policy").split());
    expect(samples[0]![0]!.tokens).toEqual(direct);
  });

  it("records without token ids (another tool's) are cut the same way when replayed", () => {
    const rec = { prompts: [LONG], winner_completions: [" sat"], loser_completions: [" ran"], winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 };
    const [t] = pairTokensFromRecord(rec, [policy], "pair", { maxPromptLength: 16 });
    expect(t!.promptIds).toEqual(policy.tokenizer.encode(LONG).slice(-16));
  });

  it("rejects a max_prompt_length that is not an integer ≥ 1", () => {
    expect(() => new PolicySampler([policy], { ...settings, maxPromptLength: 0 }, RngStream.fromSeed(0, "p")).sample([["The cat"]], 1)).toThrow(
      /max_prompt_length must be an integer ≥ 1, or null for no cut; got 0/,
    );
  });
});

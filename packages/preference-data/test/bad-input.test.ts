// Issue 17: every bad input a collection meets is a typed error that says what is wrong and how
// to fix it. The agents are the real tiny Llama checkpoint; the failing parts are user code.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type Pretrained } from "@pbrl/models";
import {
  collectComparisons,
  collectPreferencePairs,
  EmptyDatasetError,
  FormatterError,
  formatPrompts,
  PolicySampler,
  RewardError,
  RewardTimeoutError,
  resolveFormatters,
  type CandidateSet,
  type CollectOptions,
  type Comparator,
  type Formatter,
  type Policy,
  type RewardFunc,
  type TaskItem,
} from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

let loaded: Pretrained;
let policy: Policy;

beforeAll(async () => {
  loaded = await loadPretrained(TINY_LLAMA);
  policy = { model: loaded.model, tokenizer: loaded.tokenizer!, eosTokenIds: [2], padTokenId: 0 };
});
afterAll(() => loaded.model.dispose());

const items: TaskItem[] = [
  { id: "a", prompt: "The cat" },
  { id: "b", prompt: "We drink" },
  { id: "c", prompt: "Snow falls" },
];
const byLength: RewardFunc = (c) => c[0]!.map((s, j) => s.length + c[1]![j]!.length);

function options(overrides: Partial<CollectOptions> = {}): CollectOptions {
  return {
    items,
    formatters: resolveFormatters(undefined, 2),
    sampler: new PolicySampler([policy, policy], { maxNewTokens: 4, temperature: 1.2, topP: 1, topK: null, maxBatchRows: 8 }, RngStream.fromSeed(0, "policy")),
    rewardFunc: byLength,
    numCandidates: 2,
    pairSelection: "reward_gap",
    pairsPerSample: 1,
    selectionRng: RngStream.fromSeed(0, "sel"),
    rewardConcurrency: 2,
    itemsPerBatch: 2,
    ...overrides,
  };
}

/** Answers every item with two fixed joint candidates, "e agentA" and "ee agentA". */
const fixedComparator: Comparator = {
  description: "fixed",
  beginRound: async () => {},
  sample: async (_items, prompts, n): Promise<CandidateSet[]> =>
    prompts.map((agents) => ({
      texts: agents.map((_, a) => Array.from({ length: n }, (_, j) => `${"e".repeat(j + 1)} agent${a}`)),
      valid: Array.from({ length: n }, () => true),
    })),
  endRound: async () => {},
  dispose: () => {},
};

describe("(a) a reward that never returns", () => {
  it("is a RewardTimeoutError after reward_timeout_s, naming the limit, the item and the fix", async () => {
    const hangsOnC: RewardFunc = (c, ctx) => (ctx.item["id"] === "c" ? new Promise<number[]>(() => {}) : byLength(c, ctx));
    const started = performance.now();
    const err = await collectPreferencePairs(options({ rewardFunc: hangsOnC, rewardTimeoutS: 0.2 })).catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(err).toBeInstanceOf(RewardTimeoutError);
    expect((err as RewardTimeoutError).itemIndex).toBe(2);
    expect((err as Error).message).toMatch(
      /reward_func did not return within reward_timeout_s=0\.2 s on item 2 \(id "c"\) \(scoring 2 joint candidate\(s\)\); make the reward return \(or throw\) in time, or raise reward_timeout_s/,
    );
  });

  it("in iterative collection, names the side whose scoring hung", async () => {
    const hangsOnComparator: RewardFunc = (c, ctx) => (c[0]![0]!.startsWith("e agent") ? new Promise<number[]>(() => {}) : byLength(c, ctx));
    const o = options();
    const err = await collectComparisons({
      ...o,
      items: [items[0]!],
      agents: [policy, policy],
      comparator: fixedComparator,
      comparatorNumCandidates: 2,
      rewardFunc: hangsOnComparator,
      rewardTimeoutS: 0.2,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RewardTimeoutError);
    expect((err as Error).message).toMatch(/within reward_timeout_s=0\.2 s on item 0 \(id "a"\), comparator side/);
  });
});

describe("(b) a formatter that fails", () => {
  const needsQuestion: Formatter = (item) => {
    if (typeof item["question"] !== "string") throw new Error('no field "question"');
    return item["question"];
  };

  it("is a FormatterError naming the agent, the item and what it threw, which it keeps as the cause", async () => {
    const withQuestions = items.map((item, i) => (i === 2 ? item : { ...item, question: `Q${i}` }));
    const err = await collectPreferencePairs(options({ items: withQuestions, formatters: [resolveFormatters(undefined, 1)[0]!, needsQuestion] })).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toBe('the formatter of agent 1 threw on item 2 (id "c"): no field "question"; fix the formatter or the item');
    expect(((err as Error).cause as Error).message).toBe('no field "question"');
  });

  it("returning anything but a string or chat messages is an error that shows the value", () => {
    expect(() => formatPrompts([() => "ok", (() => undefined) as unknown as Formatter], items[1]!, 1)).toThrow(
      /^the formatter of agent 1 returned undefined for item 1 \(id "b"\); it must return the agent's prompt as a string, or a list of chat messages \{role: string, content: string\}$/,
    );
    expect(() => formatPrompts([(() => 42) as unknown as Formatter], items[0]!, 0)).toThrow(/returned 42 \(a number\) for item 0/);
  });

  it("a role's formatter inside a centralized joint prompt is named as the role, on the item the caller knew", () => {
    // The joint formatter does not know the item's position; the collection that calls it does.
    const roles: Formatter[] = [() => "plan", needsQuestion];
    const joint: Formatter = (item) => formatPrompts(roles, item, -1, { unit: "role" }).join("\n");
    const err = (() => {
      try {
        formatPrompts([joint], items[2]!, 2);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toBe('the formatter of role 1 threw on item 2 (id "c"): no field "question"; fix the formatter or the item');
    expect(((err as Error).cause as Error).message).toBe('no field "question"');
  });
});

describe("(c) a reward that returns strings", () => {
  it("shows them quoted, with their type and index, during collection", async () => {
    const strings = ((c: string[][]) => c[0]!.map(() => "0.5")) as unknown as RewardFunc;
    await expect(collectPreferencePairs(options({ rewardFunc: strings }))).rejects.toThrow(RewardError);
    await expect(collectPreferencePairs(options({ rewardFunc: strings }))).rejects.toThrow(
      /reward_func returned "0\.5" \(a string\) for candidate 0 of item 0 \(id "a"\) \(index 0 of the array\); return numbers/,
    );
  });
});

describe("(e) an empty dataset", () => {
  it("is an EmptyDatasetError before anything is sampled, not a run with 0 pairs", async () => {
    await expect(collectPreferencePairs(options({ items: [] }))).rejects.toThrow(EmptyDatasetError);
    await expect(collectPreferencePairs(options({ items: [] }))).rejects.toThrow(
      /^train_dataset is empty: there are no task items to collect preference pairs from; pass a dataset with at least one item$/,
    );
    const o = options({ items: [] });
    await expect(collectComparisons({ ...o, agents: [policy], comparator: fixedComparator, comparatorNumCandidates: 2 })).rejects.toThrow(
      /train_dataset is empty: there are no task items to collect comparisons from/,
    );
  });
});

// The built-in summary/expansion task of `pbrl demo`: reward components by hand, joint rewards,
// agreement with the Python port (scripts/demo/reward.py) and the shipped task files.
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  ASSETS_DIR,
  brevity,
  contentWords,
  coverage,
  faithfulness,
  firstLine,
  jointReward,
  lengthRatio,
  loadSummaryExpansionTask,
  rewardComponents,
  SUMMARY_EXPANSION_FORMATTERS,
  SUMMARY_EXPANSION_REWARD_RANGE,
  summaryExpansionReward,
  words,
} from "../src/tasks/summary-expansion.js";

const T = "The old fisherman repaired his blue boat near the harbor before the storm.";
// words(T): 13 words; content words: old fisherman repaired blue boat harbor storm (7)
const GOOD_S = " The fisherman repaired the boat.";
const GOOD_E = " The old fisherman repaired his blue boat near the harbor before the storm, and the boat was ready.";

describe("summary/expansion prompts", () => {
  it("formats the two agents' prompts as plain text", () => {
    const item = { id: "x", text: "A b." };
    expect(SUMMARY_EXPANSION_FORMATTERS[0](item)).toBe("Text: A b.\nSummary:");
    expect(SUMMARY_EXPANSION_FORMATTERS[1](item)).toBe("Text: A b.\nExpansion:");
    expect(SUMMARY_EXPANSION_REWARD_RANGE).toEqual([0, 1]);
    expect(() => SUMMARY_EXPANSION_FORMATTERS[0]({ id: "x" })).toThrow(TypeError);
  });
});

describe("summary/expansion reward components", () => {
  it("splits words and drops stopwords", () => {
    expect(words(" The OLD fisherman's boat, 2 nets!")).toEqual(["the", "old", "fisherman", "s", "boat", "2", "nets"]);
    expect(words("")).toEqual([]);
    expect(words(T)).toHaveLength(13);
    expect(contentWords(T)).toEqual(["old", "fisherman", "repaired", "blue", "boat", "harbor", "storm"]);
    expect(firstLine(" a b\nc\nd")).toBe(" a b");
    expect(firstLine("no newline")).toBe("no newline");
  });

  it("faithfulness: share of content words found in the text", () => {
    expect(faithfulness(GOOD_S, T)).toBe(1); // fisherman repaired boat
    expect(faithfulness(GOOD_E, T)).toBeCloseTo(8 / 9, 12); // 9 content words, "ready" is new
    expect(faithfulness(" The fisherman sold the boat.", T)).toBeCloseTo(2 / 3, 12);
    expect(faithfulness(" The cat slept.", T)).toBe(0);
    expect(faithfulness("", T)).toBe(0);
    expect(faithfulness(" the and of", T)).toBe(0); // no content words
  });

  it("coverage: share of the text's distinct content words in the expansion", () => {
    expect(coverage(GOOD_E, T)).toBe(1);
    expect(coverage(" The fisherman.", T)).toBeCloseTo(1 / 7, 12);
    expect(coverage(" boat boat boat", T)).toBeCloseTo(1 / 7, 12);
    expect(coverage("", T)).toBe(0);
    expect(coverage(" anything", "the and")).toBe(0);
  });

  it("brevity: full for 3..m/2 words, ramps down to 0 at the text's length", () => {
    expect(brevity(0, 13)).toBe(0);
    expect(brevity(1, 13)).toBeCloseTo(1 / 3, 12);
    expect(brevity(2, 13)).toBeCloseTo(2 / 3, 12);
    expect(brevity(3, 13)).toBe(1);
    expect(brevity(6, 13)).toBe(1);
    expect(brevity(10, 12)).toBeCloseTo(2 - 20 / 12, 12);
    expect(brevity(13, 13)).toBe(0);
    expect(brevity(20, 13)).toBe(0);
  });

  it("length ratio: |E| / (3 |S|), capped at 1", () => {
    expect(lengthRatio(GOOD_S, GOOD_E)).toBe(1); // 18 / 15
    expect(lengthRatio(" a b c d e", " a b c d e f g h i j")).toBeCloseTo(10 / 15, 12);
    expect(lengthRatio("", GOOD_E)).toBe(0);
    expect(lengthRatio(GOOD_S, "")).toBe(0);
    expect(lengthRatio(" !!", " a b")).toBe(0); // no words
  });

  it("only the first line of each completion counts", () => {
    expect(rewardComponents(`${GOOD_S}\nExpansion: blah blah`, `${GOOD_E}\nText: x`, T)).toEqual(rewardComponents(GOOD_S, GOOD_E, T));
    expect(rewardComponents("\nThe fisherman.", GOOD_E, T).faithSummary).toBe(0);
  });
});

describe("summary/expansion joint reward", () => {
  it("a good pair scores high", () => {
    // 0.1·1 + 0.1·8/9 + 0.2·1 + 0.3·1·1 + 0.3·1·(8/9)·1 = 0.6 + 0.4·8/9
    expect(jointReward(GOOD_S, GOOD_E, T)).toBeCloseTo(0.6 + (0.4 * 8) / 9, 12);
    expect(jointReward(GOOD_S, GOOD_E, T)).toBeGreaterThan(0.95);
  });

  it("a swapped pair (long summary, short expansion) scores low", () => {
    // fS = fE = 1, cov = 1/7, brev = 0 (a copy), ratio = 2 / 39
    expect(jointReward(` ${T}`, " The fisherman.", T)).toBeCloseTo(0.2 + 0.2 / 7 + (0.3 * 2) / 39, 12);
    expect(jointReward(` ${T}`, " The fisherman.", T)).toBeLessThan(0.25);
  });

  it("empty outputs score 0; one empty side caps the score", () => {
    expect(jointReward("", "", T)).toBe(0);
    expect(jointReward(GOOD_S, "", T)).toBeCloseTo(0.4, 12); // 0.1·fS + 0.3·fS·brev
    expect(jointReward("", GOOD_E, T)).toBeCloseTo(0.1 * (8 / 9) + 0.2, 12); // 0.1·fE + 0.2·cov
  });

  it("an off-topic pair scores 0, a partly off-topic pair in between", () => {
    expect(jointReward(" The cat slept.", " A dog ran in the park and played with a red ball.", T)).toBe(0);
    // fS = 2/3, fE = 3/6, cov = 3/7, brev = 1, ratio = 10/15
    const partial = jointReward(" The fisherman sold the boat.", " The fisherman repaired his boat, because the weather was nice.", T);
    expect(partial).toBeCloseTo(0.1 * (2 / 3) + 0.1 * 0.5 + 0.2 * (3 / 7) + 0.3 * (2 / 3) + 0.3 * (2 / 3) * 0.5 * (2 / 3), 12);
  });

  it("scores candidate j from completions[0][j] and completions[1][j]", () => {
    const r = summaryExpansionReward(
      [
        [GOOD_S, "", ` ${T}`],
        [GOOD_E, "", " The fisherman."],
      ],
      { item: { id: "t", text: T } },
    );
    expect(r).toHaveLength(3);
    expect(r[0]).toBeCloseTo(jointReward(GOOD_S, GOOD_E, T), 15);
    expect(r[1]).toBe(0);
    expect(r[0]!).toBeGreaterThan(r[2]!);
    for (const x of r) {
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(1);
    }
    expect(() => summaryExpansionReward([[GOOD_S]], { item: { text: T } })).toThrow(RangeError);
    expect(() => summaryExpansionReward([[GOOD_S], []], { item: { text: T } })).toThrow(RangeError);
    expect(() => summaryExpansionReward([[GOOD_S], [GOOD_E]], { item: {} })).toThrow(TypeError);
  });

  it("gives the numbers of the Python port (scripts/demo/reward_examples.json)", () => {
    const file = path.resolve(import.meta.dirname, "../../../scripts/demo/reward_examples.json");
    const examples = JSON.parse(readFileSync(file, "utf8")) as {
      text: string;
      summary: string;
      expansion: string;
      components: Record<string, number>;
      reward: number;
    }[];
    expect(examples.length).toBeGreaterThanOrEqual(20);
    for (const ex of examples) {
      const c = rewardComponents(ex.summary, ex.expansion, ex.text);
      for (const [k, v] of Object.entries(ex.components)) expect(c[k as keyof typeof c], `${k} of ${JSON.stringify(ex)}`).toBeCloseTo(v, 12);
      expect(jointReward(ex.summary, ex.expansion, ex.text)).toBeCloseTo(ex.reward, 12);
    }
    const rewards = examples.map((e) => e.reward);
    expect(Math.max(...rewards) - Math.min(...rewards)).toBeGreaterThan(0.5);
  });
});

describe("summary/expansion task files", () => {
  it("loads 64 train and 32 eval items with distinct texts", () => {
    const { train, eval: evl } = loadSummaryExpansionTask();
    expect(train).toHaveLength(64);
    expect(evl).toHaveLength(32);
    const texts = new Set([...train, ...evl].map((x) => x.text));
    expect(texts.size).toBe(96);
    expect(new Set([...train, ...evl].map((x) => x.id)).size).toBe(96);
    for (const it of [...train, ...evl]) {
      expect(it.text.length).toBeGreaterThan(20);
      expect(it.text).not.toMatch(/\n/);
      expect(words(it.text).length).toBeGreaterThanOrEqual(6);
    }
  });

  it("finds the demo assets next to the module", () => {
    expect(existsSync(path.join(ASSETS_DIR, "demo-task", "train.jsonl"))).toBe(true);
    expect(existsSync(path.join(ASSETS_DIR, "demo-model", "config.json"))).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { scoreJointCandidates, type RewardContext } from "../src/index.js";

const ctx: RewardContext = { item: { id: "q7" }, itemIndex: 7, prompts: ["a", "b"] };
const completions = [
  ["x", "yy"],
  ["zzz", ""],
];

describe("oracle scoring", () => {
  it("passes completions[agent][candidate] and the context; sync, async, typed arrays", async () => {
    let seen: unknown;
    const f = (c: string[][], context: RewardContext) => {
      seen = { c, context };
      return c[0]!.map((s, j) => s.length + c[1]![j]!.length);
    };
    expect(await scoreJointCandidates(f, completions, ctx)).toEqual({ raw: [4, 2], processed: [4, 2] });
    expect(seen).toEqual({ c: completions, context: ctx });
    expect((await scoreJointCandidates(async () => [1, 2], completions, ctx)).raw).toEqual([1, 2]);
    expect((await scoreJointCandidates(() => Float32Array.from([0.5, 1]) as unknown as number[], completions, ctx)).raw).toEqual([0.5, 1]);
  });

  it("applies reward_processor to each value, keeping the raw ones", async () => {
    expect(await scoreJointCandidates(() => [3, 2], completions, ctx, (r) => -r)).toEqual({ raw: [3, 2], processed: [-3, -2] });
  });

  it("names the item on every bad answer", async () => {
    await expect(scoreJointCandidates(() => [1], completions, ctx)).rejects.toThrow(/returned 1 value\(s\) on item 7 \(id "q7"\); expected 2/);
    await expect(scoreJointCandidates(() => [1, NaN], completions, ctx)).rejects.toThrow(/returned NaN for candidate 1 of item 7/);
    await expect(scoreJointCandidates(() => 3 as unknown as number[], completions, ctx)).rejects.toThrow(/returned number on item 7/);
    await expect(scoreJointCandidates(() => { throw new Error("judge offline"); }, completions, ctx)).rejects.toThrow(/reward_func threw on item 7 \(id "q7"\): judge offline/);
    await expect(scoreJointCandidates(() => [1, 2], completions, ctx, () => Infinity)).rejects.toThrow(/reward_processor turned 1 into Infinity/);
  });
});

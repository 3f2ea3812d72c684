import { describe, expect, it, vi } from "vitest";
import { RewardError, RewardTimeoutError, scoreJointCandidates, scoreRewardJobs, type RewardContext } from "../src/index.js";

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
    expect(
      await scoreJointCandidates(
        () => [3, 2],
        completions,
        ctx,
        (r) => -r,
      ),
    ).toEqual({ raw: [3, 2], processed: [-3, -2] });
  });

  it("names the item on every bad answer", async () => {
    await expect(scoreJointCandidates(() => [1], completions, ctx)).rejects.toThrow(/returned 1 value\(s\) on item 7 \(id "q7"\); expected 2/);
    await expect(scoreJointCandidates(() => [1, NaN], completions, ctx)).rejects.toThrow(
      /returned NaN for candidate 1 of item 7 \(id "q7"\) \(index 1 of the array\); rewards must be finite/,
    );
    await expect(scoreJointCandidates(() => 3 as unknown as number[], completions, ctx)).rejects.toThrow(/returned 3 \(a number\) on item 7/);
    await expect(
      scoreJointCandidates(
        () => {
          throw new Error("judge offline");
        },
        completions,
        ctx,
      ),
    ).rejects.toThrow(/reward_func threw on item 7 \(id "q7"\): judge offline/);
    await expect(
      scoreJointCandidates(
        () => [1, 2],
        completions,
        ctx,
        () => Infinity,
      ),
    ).rejects.toThrow(/reward_processor turned 1 into Infinity/);
  });
});

describe("what a bad reward value looks like in the error", () => {
  const fails = (f: () => unknown, processor?: (r: number) => number) => expect(scoreJointCandidates(f as () => number[], completions, ctx, processor)).rejects;

  it("shows strings in quotes and says their type, so a string reward is visible as one", async () => {
    await fails(() => ["0.5", 1]).toThrow(
      /reward_func returned "0\.5" \(a string\) for candidate 0 of item 7 \(id "q7"\) \(index 0 of the array\); return numbers \(convert with Number/,
    );
    await fails(() => "abc").toThrow(
      /reward_func returned "abc" \(a string\) on item 7 \(id "q7"\); it must return an array with one number per joint candidate \(2\)/,
    );
    await fails(async () => ["1", "2"]).toThrow(/returned "1" \(a string\) for candidate 0/);
  });

  it("covers every other shape: not an array, wrong length, holes, null, NaN and ±Infinity", async () => {
    await fails(() => ({ score: 1 })).toThrow(/returned \{"score":1\} \(an object\) on item 7/);
    await fails(() => undefined).toThrow(/returned undefined on item 7/);
    await fails(() => [1, 2, 3]).toThrow(/returned 3 value\(s\) on item 7 \(id "q7"\); expected 2, one per joint candidate \(got \[1,2,3\] \(an array\)\)/);
    // eslint-disable-next-line no-sparse-arrays
    await fails(() => [, 1]).toThrow(/returned undefined for candidate 0 of item 7/);
    await fails(() => [1, null]).toThrow(/returned null for candidate 1 of item 7/);
    await fails(() => [NaN, 1]).toThrow(/returned NaN for candidate 0 of item 7/);
    await fails(() => [1, -Infinity]).toThrow(/returned -Infinity for candidate 1 of item 7/);
    await fails(() => Float32Array.from([1, NaN])).toThrow(/returned NaN for candidate 1 of item 7/);
  });

  it("names what reward_processor did wrong, keeping what it threw as the cause", async () => {
    await fails(
      () => [1, 2],
      (r) => String(r) as unknown as number,
    ).toThrow(/reward_processor turned 1 into "1" \(a string\) for candidate 0 of item 7/);
    const err = await scoreJointCandidates(
      () => [1, 2],
      completions,
      ctx,
      () => {
        throw new Error("scale missing");
      },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RewardError);
    expect((err as Error).message).toMatch(/reward_processor threw on 1 \(candidate 0 of item 7 \(id "q7"\)\): scale missing/);
    expect(((err as Error).cause as Error).message).toBe("scale missing");
  });
});

/** How many timers of `delayMs` were set while `fn` ran, and how many of those were never cleared. */
async function timersOf(delayMs: number, fn: () => Promise<unknown>): Promise<{ set: number; uncleared: number }> {
  const set = vi.spyOn(globalThis, "setTimeout");
  const clear = vi.spyOn(globalThis, "clearTimeout");
  try {
    await fn();
    const ours = set.mock.calls.flatMap((call, i) => (call[1] === delayMs ? [set.mock.results[i]!.value as ReturnType<typeof setTimeout>] : []));
    const cleared = new Set(clear.mock.calls.map((call) => call[0]));
    return { set: ours.length, uncleared: ours.filter((t) => !cleared.has(t)).length };
  } finally {
    set.mockRestore();
    clear.mockRestore();
  }
}

describe("reward_timeout_s", () => {
  it("a reward whose Promise never settles is a RewardTimeoutError naming the limit, the item and the fix", async () => {
    const err = await scoreJointCandidates(() => new Promise<number[]>(() => {}), completions, ctx, undefined, { timeoutS: 0.2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RewardTimeoutError);
    expect(err).toBeInstanceOf(RewardError);
    expect((err as RewardTimeoutError).timeoutS).toBe(0.2);
    expect((err as RewardTimeoutError).itemIndex).toBe(7);
    expect((err as Error).message).toMatch(
      /reward_func did not return within reward_timeout_s=0\.2 s on item 7 \(id "q7"\) \(scoring 2 joint candidate\(s\)\); make the reward return \(or throw\) in time, or raise reward_timeout_s \(null: no limit\)/,
    );
  });

  it("releases its timer as soon as the reward settles, so nothing keeps the process alive", async () => {
    const t = await timersOf(1_000_000, async () => {
      expect((await scoreJointCandidates(async () => [1, 2], completions, ctx, undefined, { timeoutS: 1000 })).raw).toEqual([1, 2]);
      await expect(
        scoreJointCandidates(
          async () => {
            throw new Error("judge offline");
          },
          completions,
          ctx,
          undefined,
          { timeoutS: 1000 },
        ),
      ).rejects.toThrow(/judge offline/);
    });
    expect(t).toEqual({ set: 2, uncleared: 0 });
  });

  it("null is no limit; a bad value is a RangeError naming reward_timeout_s", async () => {
    const slow = () => new Promise<number[]>((r) => setTimeout(() => r([1, 2]), 50));
    expect((await scoreJointCandidates(slow, completions, ctx, undefined, { timeoutS: null })).raw).toEqual([1, 2]);
    await expect(scoreJointCandidates(slow, completions, ctx, undefined, { timeoutS: 0 })).rejects.toThrow(
      /reward_timeout_s must be a finite number of seconds > 0, or null for no limit; got 0/,
    );
  });

  it("scoreRewardJobs: the first failure stops the batch; queued calls never reach the oracle", async () => {
    const called: number[] = [];
    const rewardFunc = (_c: string[][], context: RewardContext) => {
      called.push(context.itemIndex);
      return context.itemIndex === 0 ? new Promise<number[]>(() => {}) : [1, 2];
    };
    const jobs = [0, 1, 2].map((i) => ({ completions, context: { ...ctx, itemIndex: i } }));
    const t = await timersOf(200, async () => {
      await expect(scoreRewardJobs(rewardFunc, jobs, { concurrency: 1, rewardTimeoutS: 0.2 })).rejects.toThrow(/within reward_timeout_s=0\.2 s on item 0/);
      await new Promise((r) => setTimeout(r, 20));
    });
    // One timer, item 0's, which fired; the queued items never started one.
    expect(called).toEqual([0]);
    expect(t.set).toBe(1);
  });

  it("scoreRewardJobs: a call in flight when another fails has its timer released at once", async () => {
    const rewardFunc = (_c: string[][], context: RewardContext) =>
      context.itemIndex === 0 ? new Promise<number[]>(() => {}) : Promise.reject(new Error("judge offline"));
    const jobs = [0, 1].map((i) => ({ completions, context: { ...ctx, itemIndex: i } }));
    const t = await timersOf(1_000_000, () =>
      expect(scoreRewardJobs(rewardFunc, jobs, { concurrency: 2, rewardTimeoutS: 1000 })).rejects.toThrow(
        /reward_func threw on item 1 \(id "q7"\): judge offline/,
      ),
    );
    expect(t).toEqual({ set: 2, uncleared: 0 });
  });
});

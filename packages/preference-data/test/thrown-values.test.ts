// A user's reward or formatter that throws (or rejects with) something other than an Error: the
// message shows the value as JSON — a cycle marked, a huge value cut — never "[object Object]".
import { describe, expect, it } from "vitest";
import { formatAgentPrompts, FormatterError, RewardError, scoreJointCandidates, type RewardContext } from "../src/index.js";

const ctx: RewardContext = { item: { id: "q7" }, itemIndex: 7, prompts: ["a", "b"] };
const completions = [["x"], ["y"]];

async function rewardError(reward: () => unknown, processor?: (r: number) => number): Promise<RewardError> {
  const err = await scoreJointCandidates(reward as never, completions, ctx, processor).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RewardError);
  return err as RewardError;
}

function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { code: 1 };
  value["self"] = value;
  return value;
}

describe("a non-Error thrown by user code", () => {
  it("reward_func that throws an object with a cycle", async () => {
    const value = cyclic();
    const err = await rewardError(() => {
      throw value;
    });
    expect(err.message).toBe('reward_func threw on item 7 (id "q7"): a non-Error value was thrown: {"code":1,"self":"[Circular]"}');
    expect(err.cause).toBe(value);
  });

  it("an async reward_func that rejects with an object", async () => {
    const err = await rewardError(() => Promise.reject({ code: 1, detail: "quota" }));
    expect(err.message).toBe('reward_func threw on item 7 (id "q7"): a non-Error value was thrown: {"code":1,"detail":"quota"}');
  });

  it("reward_processor that throws a huge object: cut, not spread over the screen", async () => {
    const err = await rewardError(
      () => [1],
      () => {
        throw { rows: Array.from({ length: 100_000 }, (_, i) => i) };
      },
    );
    expect(err.message).toMatch(/^reward_processor threw on 1 \(candidate 0 of item 7 \(id "q7"\)\): a non-Error value was thrown: \{"rows":\[0,1,2,[\d,]+…$/);
    expect(err.message.length).toBeLessThan(600);
  });

  it("a formatter that throws an object with a cycle", () => {
    let err: unknown;
    try {
      formatAgentPrompts(
        [
          () => {
            throw cyclic();
          },
        ],
        { id: "q7" },
        7,
      );
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toContain('a non-Error value was thrown: {"code":1,"self":"[Circular]"}');
    expect((err as Error).message).not.toContain("[object Object]");
  });
});

// The bookkeeping of policyGradientUpdate on hand-made rollouts (no model): the rows, their
// owners, the per-agent advantages, the checks and their messages, and the metrics.
import { describe, expect, it } from "vitest";
import { agentAdvantages, NonFiniteError, policyGradientMetrics, policyRows, rowOwners, type Rollout } from "../src/index.js";
import { checkRollouts } from "../src/update.js";

/** A rollout of item `itemIndex` for two agents: agent a's prompt is [10 + a, item], its generation g is [100·a + g]. */
function rollout(itemIndex: number, returns: number[], rewards: number[] = returns): Rollout {
  return {
    itemIndex,
    item: { id: String(itemIndex) },
    prompts: ["p0", "p1"],
    promptIds: [
      [10, itemIndex],
      [11, itemIndex],
    ],
    tokens: [returns.map((_, g) => [g]), returns.map((_, g) => [100 + g])],
    texts: [returns.map(() => "t"), returns.map(() => "t")],
    rewards,
    returns,
  };
}

describe("policyRows and rowOwners", () => {
  it("rollout-major then generation, and the item and generation of every row", () => {
    const batch = [rollout(4, [1, 2]), rollout(7, [3, 5])];
    expect(policyRows(batch, 1)).toEqual([
      { promptIds: [11, 4], completionIds: [100] },
      { promptIds: [11, 4], completionIds: [101] },
      { promptIds: [11, 7], completionIds: [100] },
      { promptIds: [11, 7], completionIds: [101] },
    ]);
    expect(rowOwners(batch)).toEqual([
      { item: 4, g: 0 },
      { item: 4, g: 1 },
      { item: 7, g: 0 },
      { item: 7, g: 1 },
    ]);
  });

  it("names the item and agent of a rollout without samples for it, or with a generation count that does not match its returns", () => {
    const noTokens = { ...rollout(7, [1, 2]), tokens: [[[0], [1]]] };
    expect(() => policyRows([noTokens], 1)).toThrow(/^the rollout of item 7 has no samples for agent 1$/);
    const noPrompt = { ...rollout(7, [1, 2]), promptIds: [[10, 7]] };
    expect(() => policyRows([noPrompt], 1)).toThrow(/^the rollout of item 7 has no samples for agent 1$/);
    const short = { ...rollout(7, [1, 2]), tokens: [[[0]], [[100], [101]]] };
    expect(() => policyRows([short], 0)).toThrow(/^the rollout of item 7 has 1 generation\(s\) for agent 0 but 2 return\(s\)$/);
  });
});

describe("agentAdvantages", () => {
  it("per rollout: the shaped returns' baseline and normalisation (hand-computed)", () => {
    // Item 4: R = [1, 3], p = [0.5, 0.5] → R' = [0.5, 2.5], mean 1.5 → A = [−1, 1]; std_pop(R') = 1 → normalised the same.
    // Item 7: R = [2, 6], p = [0, 2] → R' = [2, 4], mean 3 → A = [−1, 1]; std_pop = 1.
    const batch = [rollout(4, [1, 3]), rollout(7, [2, 6])];
    const penalties = [
      [
        [0.5, 0.5],
        [0, 2],
      ],
      [
        [0, 0],
        [0, 0],
      ],
    ];
    expect(agentAdvantages(batch, 0, "mean", true, penalties)).toEqual([
      [-1, 1],
      [-1, 1],
    ]);
    // Agent 1, no penalty: item 7, R = [2, 6], max 6 → [−4, 0], std_pop 2 → [−2, 0].
    expect(agentAdvantages(batch, 1, "max", true, penalties)[1]).toEqual([-2, 0]);
    // No penalties at all: raw returns.
    expect(agentAdvantages(batch, 0, "raw", false)).toEqual([
      [1, 3],
      [2, 6],
    ]);
  });

  it("names the agent, rollout and item of missing or wrong penalties", () => {
    const batch = [rollout(4, [1, 3]), rollout(7, [2, 6])];
    expect(() => agentAdvantages(batch, 1, "mean", false, [[[0, 0]]])).toThrow(/^no penalties for agent 1 on rollout 0 \(item 4\)$/);
    expect(() => agentAdvantages(batch, 0, "mean", false, [[[0, 0]]])).toThrow(/^no penalties for agent 0 on rollout 1 \(item 7\)$/);
    let err: Error | undefined;
    try {
      agentAdvantages(batch, 0, "mean", false, [[[0, 0], [1]]]);
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(RangeError);
    expect(err!.message).toBe("agent 0, item 7: 1 penalties for 2 returns; pass one per generation");
    expect((err!.cause as Error).message).toBe("1 penalties for 2 returns; pass one per generation");
  });
});

describe("checkRollouts", () => {
  const batch = [rollout(4, [1, 3]), rollout(7, [2, 6])];
  const zero = [
    [
      [0, 0],
      [0, 0],
    ],
    [
      [0, 0],
      [0, 0],
    ],
  ];

  it("accepts a consistent batch with or without penalties", () => {
    expect(() => checkRollouts(2, batch, undefined, "b")).not.toThrow();
    expect(() => checkRollouts(2, batch, zero, "b")).not.toThrow();
  });

  it("rejects an empty batch, a wrong agent count and non-finite returns, naming where", () => {
    expect(() => checkRollouts(2, [], undefined, "epoch 3, batch 1")).toThrow(/^policyGradientUpdate: no rollouts in epoch 3, batch 1$/);
    const onePrompt = { ...batch[0]!, promptIds: [[10, 4]] };
    expect(() => checkRollouts(2, [onePrompt], undefined, "b")).toThrow(/^the rollout of item 4 has samples for 2 agent\(s\); 2 are being trained \(b\)$/);
    const oneAgent = { ...batch[0]!, tokens: [[[0], [1]]] };
    expect(() => checkRollouts(2, [oneAgent], undefined, "b")).toThrow(/^the rollout of item 4 has samples for 1 agent\(s\); 2 are being trained \(b\)$/);
    expect(() => checkRollouts(2, [rollout(4, [NaN, 1])], undefined, "e 1")).toThrow(/^the return of generation 0 of item 4 is NaN in e 1$/);
    expect(() => checkRollouts(3, batch, undefined, "b")).toThrow(/^the rollout of item 4 has samples for 2 agent\(s\); 3 are being trained \(b\)$/);
    const inf = rollout(7, [2, -Infinity]);
    expect(() => checkRollouts(2, [batch[0]!, inf], undefined, "e 1")).toThrow(NonFiniteError);
    expect(() => checkRollouts(2, [batch[0]!, inf], undefined, "e 1")).toThrow(/^the return of generation 1 of item 7 is -Infinity in e 1$/);
  });

  it("rejects penalties of the wrong shape or non-finite ones, naming the agent, item and generation", () => {
    expect(() => checkRollouts(2, batch, zero.slice(1), "b")).toThrow(/^penalties: got 1 agent\(s\), expected 2 \(b\)$/);
    expect(() => checkRollouts(2, batch, [zero[0]!, [[0, 0]]], "b")).toThrow(/^penalties of agent 1: got 1 rollout\(s\), expected 2 \(b\)$/);
    expect(() => checkRollouts(2, batch, [zero[0]!, [[0, 0], [0]]], "b")).toThrow(
      /^penalties of agent 1 on item 7: got 1, expected 2, one per generation \(b\)$/,
    );
    expect(() =>
      checkRollouts(
        2,
        batch,
        [
          zero[0]!,
          [
            [Infinity, 0],
            [0, 0],
          ],
        ],
        "b",
      ),
    ).toThrow(/^agent 1 has a non-finite penalty \(Infinity\) for generation 0 of item 4 in b$/);
    expect(() =>
      checkRollouts(
        2,
        batch,
        [
          zero[0]!,
          [
            [0, 0],
            [0, NaN],
          ],
        ],
        "b",
      ),
    ).toThrow(NonFiniteError);
    expect(() =>
      checkRollouts(
        2,
        batch,
        [
          zero[0]!,
          [
            [0, 0],
            [0, NaN],
          ],
        ],
        "b",
      ),
    ).toThrow(/^agent 1 has a non-finite penalty \(NaN\) for generation 1 of item 7 in b$/);
  });
});

describe("policyGradientMetrics", () => {
  it("each agent's mean step loss, advantage and log-prob, the penalty mean, the reward and return means, the advantage spread (hand-computed)", () => {
    const batch = [rollout(4, [1, 3], [0, 2]), rollout(7, [2, 6], [4, 4])];
    const advantages = [
      [-1, 1, -1, 1],
      [0, 0, 2, 2],
    ];
    const steps = [
      [
        { loss: 1, logProbs: [-1, -2] },
        { loss: 3, logProbs: [-3, -6] },
      ],
      [{ loss: -0.5, logProbs: [-1, -1, -1, -5] }],
    ];
    const penalties = [
      [
        [1, 2],
        [3, 6],
      ],
      [
        [0, 0],
        [0, 0],
      ],
    ];
    const m = policyGradientMetrics(batch, advantages, steps, penalties);
    // agent 0: loss (1 + 3)/2 = 2, advantage mean 0, log-prob mean −12/4 = −3, penalty mean 12/4 = 3.
    // agent 1: loss −0.5, advantage mean 1, log-prob mean −8/4 = −2, penalty mean 0.
    // rewards [0, 2, 4, 4] → 2.5; returns [1, 3, 2, 6] → 3.
    // advantages over both agents [−1, 1, −1, 1, 0, 0, 2, 2]: mean 0.5, deviations ±1.5 four times and ±0.5 four times:
    // (4·2.25 + 4·0.25)/8 = 10/8 = 1.25 → std √1.25.
    expect(m).toEqual({
      "agent_0/loss": 2,
      "agent_0/advantage_mean": 0,
      "agent_0/logprob_mean": -3,
      "agent_0/penalty_mean": 3,
      "agent_1/loss": -0.5,
      "agent_1/advantage_mean": 1,
      "agent_1/logprob_mean": -2,
      "agent_1/penalty_mean": 0,
      "turn_1/reward_mean": 2.5,
      "turn_1/expected_return": 3,
      "rl/advantage_std": Math.sqrt(1.25),
    });
    expect(Object.keys(policyGradientMetrics(batch, advantages, steps, undefined)).filter((k) => k.includes("penalty"))).toEqual([]);
  });
});

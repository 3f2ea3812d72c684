import { describe, expect, it } from "vitest";
import {
  advantageModeFor,
  baselineAdvantages,
  canonicalRlAlgorithm,
  groupAdvantages,
  isReinforceAlgorithm,
  normalizationScale,
  RL_ALGORITHMS,
  RlAlgorithmError,
  shapeReturns,
  stdPop,
  type AdvantageMode,
} from "../src/index.js";

const close = (got: number[], want: number[], digits = 10): void => {
  expect(got.length).toBe(want.length);
  got.forEach((g, k) => expect(g).toBeCloseTo(want[k]!, digits));
};

// R = [1, 2, 6]: mean 3, std_pop = √(14/3).
const R = [1, 2, 6];
const S = Math.sqrt(14 / 3);

describe("group advantages (hand-computed, R = [1, 2, 6])", () => {
  it("without normalisation: each mode's baseline", () => {
    close(groupAdvantages(R, "mean", false), [-2, -1, 3]);
    close(groupAdvantages(R, "raw", false), [1, 2, 6]);
    close(groupAdvantages(R, "max", false), [-5, -4, 0]);
    // rloo: R_k − mean of the other two: 1 − 4, 2 − 3.5, 6 − 1.5 (= 3/2 × the mean mode's)
    close(groupAdvantages(R, "rloo", false), [-3, -1.5, 4.5]);
  });

  it("with normalisation: divided by std_pop(R), never re-centred, so the modes stay different", () => {
    expect(stdPop(R)).toBeCloseTo(S, 12);
    expect(normalizationScale(R)).toBeCloseTo(S, 12);
    close(groupAdvantages(R, "mean", true), [-2 / S, -1 / S, 3 / S]);
    close(groupAdvantages(R, "raw", true), [1 / S, 2 / S, 6 / S]);
    close(groupAdvantages(R, "max", true), [-5 / S, -4 / S, 0]);
    close(groupAdvantages(R, "rloo", true), [-3 / S, -1.5 / S, 4.5 / S]);
    // Numerically: mean [-0.9258, -0.4629, 1.3887], raw [0.4629, 0.9258, 2.7775], max [-2.3146, -1.8516, 0], rloo [-1.3887, -0.6944, 2.0831]
    close(groupAdvantages(R, "raw", true), [0.46291, 0.92582, 2.77746], 4);
  });

  it("keeps the baselines' meaning after normalisation (CoMLRL's z-score would make all four identical)", () => {
    const modes: AdvantageMode[] = ["mean", "raw", "max", "rloo"];
    for (const normalize of [false, true]) {
      const out = modes.map((m) => groupAdvantages(R, m, normalize));
      const distinct = new Set(out.map((a) => a.map((x) => x.toFixed(9)).join()));
      expect(distinct.size).toBe(4);
      const [mean, raw, max, rloo] = out as [number[], number[], number[], number[]];
      expect(raw.every((x) => x > 0)).toBe(true);
      expect(max.every((x) => x <= 0)).toBe(true);
      expect(mean.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 12);
      expect(rloo.reduce((a, b) => a + b, 0)).toBeCloseTo(0, 12);
      rloo.forEach((x, k) => expect(x).toBeCloseTo((3 / 2) * mean[k]!, 12));
    }
    // What CoMLRL does instead, for contrast: z-scoring any of them gives the same vector.
    const z = (a: number[]): number[] => {
      const m = a.reduce((x, y) => x + y, 0) / a.length;
      return a.map((x) => (x - m) / stdPop(a));
    };
    const zs = (["mean", "raw", "max", "rloo"] as const).map((m) =>
      z(baselineAdvantages(R, m))
        .map((x) => x.toFixed(9))
        .join(),
    );
    expect(new Set(zs).size).toBe(1);
  });

  it("G = 1: rloo falls back to raw (a leave-one-out baseline over no samples is 0); normalisation leaves it unscaled", () => {
    close(groupAdvantages([3], "rloo", false), [3]);
    close(groupAdvantages([3], "rloo", true), [3]);
    close(groupAdvantages([3], "raw", true), [3]);
    close(groupAdvantages([3], "mean", true), [0]);
    close(groupAdvantages([3], "max", true), [0]);
    expect(normalizationScale([3])).toBe(1);
  });

  it("a group without spread is not rescaled (no division by the 1e-6 floor)", () => {
    close(groupAdvantages([2, 2, 2], "raw", true), [2, 2, 2]);
    close(groupAdvantages([2, 2, 2], "mean", true), [0, 0, 0]);
    close(groupAdvantages([2, 2, 2], "rloo", true), [0, 0, 0]);
    close(groupAdvantages([2, 2, 2], "max", true), [0, 0, 0]);
    expect(normalizationScale([1, 1 + 1e-9])).toBe(1);
    // With spread above the floor it is exactly max(std, 1e-6) = std.
    expect(normalizationScale([0, 2e-6])).toBeCloseTo(1e-6, 15);
  });

  it("rejects empty or non-finite groups", () => {
    expect(() => groupAdvantages([], "mean", false)).toThrow(/empty group/);
    expect(() => groupAdvantages([1, NaN], "raw", false)).toThrow(/return 1 .*NaN.*finite/);
    expect(() => groupAdvantages([1, Infinity], "mean", true)).toThrow(/finite/);
    expect(() => groupAdvantages([1, 2], "best" as AdvantageMode, false)).toThrow(/mean, raw, max, rloo/);
  });
});

describe("return shaping (the penalty hook)", () => {
  it("subtracts per-sample penalties from the returns before the baseline", () => {
    close(shapeReturns(R, [0.5, 0, 1]), [0.5, 2, 5]);
    // mean of [0.5, 2, 5] is 2.5
    close(groupAdvantages(shapeReturns(R, [0.5, 0, 1]), "mean", false), [-2, -0.5, 2.5]);
    close(groupAdvantages(shapeReturns(R, [0.5, 0, 1]), "max", false), [-4.5, -3, 0]);
    close(shapeReturns(R, undefined), R);
  });

  it("rejects penalties of the wrong length or non-finite ones", () => {
    expect(() => shapeReturns(R, [1, 2])).toThrow(/2 penalties for 3 returns/);
    expect(() => shapeReturns(R, [0, NaN, 0])).toThrow(/penalty 1 is NaN/);
  });
});

describe("rl_algorithm → advantage mode", () => {
  it("maps the REINFORCE family and the alias", () => {
    expect(advantageModeFor("magrpo")).toBe("mean");
    expect(advantageModeFor("mareinforce")).toBe("raw");
    expect(advantageModeFor("mareforce")).toBe("raw");
    expect(advantageModeFor("maremax")).toBe("max");
    expect(advantageModeFor("marloo")).toBe("rloo");
    expect(advantageModeFor("MAGRPO")).toBe("mean");
    expect(canonicalRlAlgorithm("mareforce")).toBe("mareinforce");
    expect(RL_ALGORITHMS).toEqual(["magrpo", "mareinforce", "maremax", "marloo", "maac", "iac"]);
  });

  it("knows the actor-critic names but gives them no group baseline; rejects unknown names with the accepted list", () => {
    expect(canonicalRlAlgorithm("maac")).toBe("maac");
    expect(isReinforceAlgorithm("iac")).toBe(false);
    expect(isReinforceAlgorithm("marloo")).toBe(true);
    expect(() => advantageModeFor("maac")).toThrow(/actor-critic/);
    expect(() => advantageModeFor("ppo")).toThrow(RlAlgorithmError);
    expect(() => advantageModeFor("ppo")).toThrow(/"ppo".*magrpo, mareinforce, maremax, marloo, maac, iac/);
  });
});

describe("advantages: the edges and the exact messages", () => {
  it("std_pop of no values is 0, of [1, 3] is 1; two returns are rescaled by their spread", () => {
    expect(stdPop([])).toBe(0);
    // [1, 3]: mean 2, deviations ±1 → √((1 + 1)/2) = 1.
    expect(stdPop([1, 3])).toBe(1);
    // [0, 4]: mean 2, std_pop 2 → raw [0, 4] / 2 = [0, 2]; G = 2 is rescaled (only G = 1 is not).
    expect(normalizationScale([0, 4])).toBe(2);
    expect(groupAdvantages([0, 4], "raw", true)).toEqual([0, 2]);
  });

  it("says what is wrong and what is accepted", () => {
    expect(() => groupAdvantages([], "mean", false)).toThrow(/^advantages of an empty group: a group needs at least one return$/);
    expect(() => normalizationScale([])).toThrow(/^advantages of an empty group/);
    expect(() => groupAdvantages([1, NaN], "raw", false)).toThrow(/^return 1 of the group is NaN; returns must be finite$/);
    expect(() => groupAdvantages([1, 2], "best" as AdvantageMode, false)).toThrow(/^advantage mode "best" is not one of mean, raw, max, rloo$/);
    expect(() => shapeReturns(R, [1, 2])).toThrow(/^2 penalties for 3 returns; pass one per generation$/);
    expect(() => shapeReturns(R, [0, -Infinity, 0])).toThrow(/^penalty 1 is -Infinity; penalties must be finite$/);
    expect(() => advantageModeFor("ppo")).toThrow(
      /^rl_algorithm: unknown value "ppo"; accepted: magrpo, mareinforce, maremax, marloo, maac, iac \(alias: mareforce = mareinforce\)$/,
    );
    expect(() => advantageModeFor(" IAC ")).toThrow(
      /^rl_algorithm="iac" is an actor-critic algorithm and has no group baseline; the REINFORCE family is magrpo, mareinforce, maremax, marloo$/,
    );
  });

  it("names are trimmed and case-insensitive", () => {
    expect(canonicalRlAlgorithm("  MaReForce\t")).toBe("mareinforce");
    expect(advantageModeFor(" marloo ")).toBe("rloo");
  });
});

describe("advantages: far from zero, the first return, the error's name", () => {
  it("the spread of returns far from zero is the spread of their deviations (no cancellation)", () => {
    // R = [2^51 + 0.5, 2^51 − 0.5]: mean 2^51, deviations ±0.5 (all exact in float64) → std_pop = √((0.25 + 0.25)/2) = 0.5.
    // Σ x² − n·mean² would lose it: 2^51 + 0.5 + 2^51 rounds to 2^52, and the result comes out √(0.25/2) ≈ 0.354.
    expect(stdPop([2 ** 51 + 0.5, 2 ** 51 - 0.5])).toBe(0.5);
  });

  it("a non-finite first return is named too", () => {
    expect(() => groupAdvantages([NaN, 1], "raw", false)).toThrow(/^return 0 of the group is NaN; returns must be finite$/);
    expect(() => shapeReturns([1, 2], [NaN, 0])).toThrow(/^penalty 0 is NaN; penalties must be finite$/);
  });

  it("its errors are RlAlgorithmErrors by name", () => {
    let err: Error | undefined;
    try {
      canonicalRlAlgorithm("ppo");
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(RlAlgorithmError);
    expect(err!.name).toBe("RlAlgorithmError");
  });
});

import { describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { ConfigError, MADPOIterTrainer } from "../src/index.js";
import { binEdges, declaredRewardRange, distributionFile, histogram } from "../src/reward-distribution.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

describe("reward distributions (hand-computed)", () => {
  it("17 evenly spaced edges over the range", () => {
    const e = binEdges(0, 3);
    expect(e).toHaveLength(17);
    expect(e[0]).toBe(0);
    expect(e[16]).toBe(3);
    expect(e[8]).toBeCloseTo(1.5, 12);
    expect(() => binEdges(1, 1)).toThrow(/min < max/);
  });

  it("bins are [a, b) except the last, values are clipped, non-finite dropped", () => {
    const e = binEdges(0, 16); // edges at integers
    const c = histogram([0, 0.5, 1, 15.5, 16, 20, -3, Number.NaN], e);
    expect(c[0]).toBe(3); // 0, 0.5 and the clipped −3
    expect(c[1]).toBe(1); // 1 opens bin 1
    expect(c[15]).toBe(3); // 15.5, the upper edge 16, and the clipped 20
    expect(c.reduce((a, b) => a + b, 0)).toBe(7);
  });

  it("writes CoMLRL's file layout: counts sum to the values, no density", () => {
    const f = distributionFile(2, [0, 3], { target: [0, 0.5, 1.5, 3], comparator: [] }, { target: [1], comparator: [2] });
    expect(f.iteration).toBe(2);
    expect(f.candidate.target.counts.reduce((a, b) => a + b, 0)).toBe(4);
    expect(f.candidate.target.mean).toBeCloseTo(1.25, 12);
    expect(f.candidate.comparator).toEqual({ sample_count: 0, mean: null, counts: new Array(16).fill(0), raw_rewards: [] });
    expect(f.bin_centers[0]).toBeCloseTo(3 / 32, 12);
    expect(JSON.stringify(f)).not.toContain("density");
  });

  it("needs a declared range of two finite numbers, min < max, and says how to attach one", () => {
    expect(declaredRewardRange([0, 3])).toEqual([0, 3]);
    expect(declaredRewardRange(undefined)).toMatch(/reward_func\.reward_range = \[min, max\]/);
    for (const bad of [[1, 1], [2, 1], [0, Infinity], [0], "0,1", [0, "1"]])
      expect(declaredRewardRange(bad)).toMatch(/must be \[min, max\] with finite numbers and min < max/);
  });

  it("log_reward_distribution: without a declared range the trainer refuses at construction; off, no distribution is written", async () => {
    const bare = (c: string[][]) => c[0]!.map(() => 1);
    expect(() => new MADPOIterTrainer({ ...ITERATIVE_RUN, rewardFunc: bare, args: { ...ITERATIVE_RUN.args, log_reward_distribution: true } })).toThrow(
      ConfigError,
    );
    expect(
      () =>
        new MADPOIterTrainer({
          ...ITERATIVE_RUN,
          rewardFunc: Object.assign(bare, { reward_range: [2, 1] }),
          args: { ...ITERATIVE_RUN.args, log_reward_distribution: true },
        }),
    ).toThrow(/log_reward_distribution: reward_func\.reward_range must be \[min, max\].*got \[2,1\]/);
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-dist-"));
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      args: { ...ITERATIVE_RUN.args, log_reward_distribution: false, num_iterations: 1, output_dir: out, verbose: false, eval_interval: 0 },
    });
    await t.train();
    t.dispose();
    expect(existsSync(path.join(out, "preference_replay", "iteration_0001.json"))).toBe(true);
    expect(existsSync(path.join(out, "reward_distributions"))).toBe(false);
    // on: the JSON and its plot beside it, every round
    const on = mkdtempSync(path.join(tmpdir(), "pbrl-dist-"));
    const t2 = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      args: { ...ITERATIVE_RUN.args, log_reward_distribution: true, num_iterations: 2, output_dir: on, verbose: false, eval_interval: 0 },
    });
    await t2.train();
    t2.dispose();
    expect(readdirSync(path.join(on, "reward_distributions")).sort()).toEqual([
      "iteration_0001.json",
      "iteration_0001.svg",
      "iteration_0002.json",
      "iteration_0002.svg",
    ]);
    const svg = readFileSync(path.join(on, "reward_distributions", "iteration_0002.svg"), "utf8");
    expect(svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg).toMatch(/target/);
    expect(svg).toMatch(/comparator/);
  });
});

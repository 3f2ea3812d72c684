// JointRewardModel's own checks on what it is given: error classes, a backbone without a
// tokenizer, a head file of another shape, and pairLoss's rows.
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { assertNoTensorLeak, RngStream } from "@pbrl/core-tensor";
import { ScalarHead } from "@pbrl/models";
import { JointRewardModel, negLogSigmoid, NonFiniteRewardError, RewardModelError } from "../src/index.js";
import { TINY_LLAMA } from "./helpers.js";

let rm: JointRewardModel;
let dir: string;
beforeEach(async () => {
  rm = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(31, "head") });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "pbrl-rm-checks-"));
});
afterEach(async () => {
  rm.dispose();
  await fs.rm(dir, { recursive: true, force: true });
});

describe("error classes", () => {
  it("name themselves", () => {
    expect(new RewardModelError("x").name).toBe("RewardModelError");
    const e = new NonFiniteRewardError("y");
    expect(e.name).toBe("NonFiniteRewardError");
    expect(e).toBeInstanceOf(RewardModelError);
  });
});

describe("create checks the backbone and the head file", () => {
  it("a checkpoint without tokenizer.json is an error, and the backbone loaded for it is freed", async () => {
    const ckpt = path.join(dir, "no-tokenizer");
    await fs.mkdir(ckpt);
    for (const name of await fs.readdir(TINY_LLAMA)) {
      if (!name.startsWith("tokenizer") && name !== "special_tokens_map.json") await fs.copyFile(path.join(TINY_LLAMA, name), path.join(ckpt, name));
    }
    await assertNoTensorLeak("create without a tokenizer", async () => {
      await expect(JointRewardModel.create({ source: ckpt, rng: RngStream.fromSeed(0) })).rejects.toThrow(
        new RewardModelError(`${ckpt} has no tokenizer.json: the reward model tokenizes with its backbone's tokenizer`),
      );
    });
  });

  it("a head file that is not hidden → 1 with bias is an error naming what it holds", async () => {
    // tiny-llama's hidden size is 64.
    const cases: [string, { hiddenSize: number; hiddenDim: number; bias: boolean }][] = [
      ["narrow", { hiddenSize: 32, hiddenDim: 0, bias: true }],
      ["two-layer", { hiddenSize: 64, hiddenDim: 16, bias: true }],
      ["no-bias", { hiddenSize: 64, hiddenDim: 0, bias: false }],
    ];
    for (const [name, o] of cases) {
      const file = path.join(dir, `${name}.safetensors`);
      const head = ScalarHead.init({ ...o, prefix: "reward_head" }, RngStream.fromSeed(1));
      await head.save(file);
      head.dispose();
      await assertNoTensorLeak(`create with the ${name} head`, async () => {
        await expect(JointRewardModel.create({ source: TINY_LLAMA, headFile: file })).rejects.toThrow(
          new RewardModelError(
            `${file}: a reward head is one linear layer 64 → 1 with bias, but this file holds hiddenSize ${o.hiddenSize}, hiddenDim ${o.hiddenDim}, bias ${o.bias}`,
          ),
        );
      });
    }
  });
});

describe("pairLoss", () => {
  const joint = (a: string, b: string) => ({ prompts: ["Name a fruit.", "Describe it."], completions: [a, b] });

  it("is mean(−log σ(s_w − s_l)) over the pairs, with diffs in pair order", () => {
    const winners = [rm.encode(joint("apple", "red and sweet, crisp")), rm.encode(joint("pear", "soft"))];
    const losers = [rm.encode(joint("stone", "grey")), rm.encode(joint("banana", "long, yellow and ripe"))];
    const sw = rm.scoreIds(winners);
    const sl = rm.scoreIds(losers);
    const { loss, diffs } = rm.pairLoss(winners, losers);
    try {
      expect(diffs).toHaveLength(2);
      for (let i = 0; i < 2; i++) expect(Math.abs(diffs[i]! - (sw[i]! - sl[i]!))).toBeLessThan(1e-5);
      const want = (negLogSigmoid(sw[0]! - sl[0]!) + negLogSigmoid(sw[1]! - sl[1]!)) / 2;
      expect(loss.shape).toEqual([]);
      expect(Math.abs(loss.dataSync()[0]! - want)).toBeLessThan(1e-5);
    } finally {
      loss.dispose();
    }
  });

  it("needs as many winners as losers, at least one", () => {
    const row = rm.encode(joint("a", "b"));
    expect(() => rm.pairLoss([row, row], [row])).toThrow(new RangeError("pairLoss needs as many winners as losers, at least one (got 2 and 1)"));
    expect(() => rm.pairLoss([], [])).toThrow(new RangeError("pairLoss needs as many winners as losers, at least one (got 0 and 0)"));
  });
});

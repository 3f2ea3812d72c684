// The reward model's edges that the other tests leave open: a ready text, empty and uneven joint
// inputs, a model without a token limit, the tokenizer's limit when no length is given, the
// revision and device reaching the loader, a folder without reward_model.json, the epoch means,
// the head's initial weights, non-finite gradients, and a disposed model's entry points.
import { promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DeviceUnavailableError, RngStream, tf } from "@pbrl/core-tensor";
import {
  JointRewardModel,
  jointText,
  NonFiniteRewardError,
  REWARD_CONFIG_FILE,
  RewardModelError,
  type RewardBatchMetrics,
  type RewardTrainOptions,
} from "../src/index.js";
import { markerPairs, TINY_LLAMA } from "./helpers.js";

let rm: JointRewardModel;
let dir: string;
beforeEach(async () => {
  rm = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(41, "head") });
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "pbrl-rm-edges-"));
});
afterEach(async () => {
  rm.dispose();
  await fs.rm(dir, { recursive: true, force: true });
});

const pairs = markerPairs(RngStream.fromSeed(42, "pairs"), 12);
const trainOpts = (o: Partial<RewardTrainOptions> = {}): RewardTrainOptions => ({
  learningRate: 0.01,
  epochs: 1,
  batchSize: 4,
  rng: RngStream.fromSeed(43, "shuffle"),
  ...o,
});
const MAX_POSITIONS = 256; // tiny-llama's max_position_embeddings

describe("encode", () => {
  it("takes a ready text as it is: the same ids as the joint response it joins", () => {
    const prompts = ["Name a fruit.", "Describe it."];
    const completions = ["apple", "red and sweet"];
    const ids = rm.encode({ prompts, completions });
    expect(rm.encode(jointText(prompts, completions))).toEqual(ids);
    expect(ids.length).toBeGreaterThan(5);
  });

  it("refuses a joint response without agents or with uneven lists, naming the input", () => {
    expect(() => rm.encode({ prompts: [], completions: [] })).toThrow(
      new RangeError("input: 0 prompts but 0 completions; one prompt and one completion per agent, at least one agent"),
    );
    expect(() => rm.encode({ prompts: ["a"], completions: [] })).toThrow(
      new RangeError("input: 1 prompts but 0 completions; one prompt and one completion per agent, at least one agent"),
    );
  });

  it("a limit of 1 is allowed, 8 keeps 8 tokens; a model without a limit truncates nothing", () => {
    const text = "the quick dog and the slow bird by the blue river";
    const full = rm.encode(text, 10_000);
    expect(full.length).toBeGreaterThan(8);
    // 1 passes maxLength's own check; tiny-llama's BOS then leaves no room, which encodeKeepEnd says.
    expect(() => rm.encode(text, 1)).toThrow(new RangeError("max length 1 leaves no room for text: the tokenizer adds 1 special token(s) to every sequence"));
    expect(rm.encode(text, 8)).toHaveLength(8);
    rm.maxLength = undefined;
    expect(rm.encode(text)).toEqual(full);
    expect(rm.scores([{ prompts: ["Say it."], completions: [text] }])).toHaveLength(1);
  });
});

describe("the default token limit: the tokenizer's model_max_length, else max_position_embeddings", () => {
  async function withTokenizerConfig(name: string, edit: (config: Record<string, unknown>) => Record<string, unknown> | undefined): Promise<string> {
    const ckpt = path.join(dir, name);
    await fs.cp(TINY_LLAMA, ckpt, { recursive: true });
    const file = path.join(ckpt, "tokenizer_config.json");
    const config = edit(JSON.parse(await fs.readFile(file, "utf8")) as Record<string, unknown>);
    if (config === undefined) await fs.rm(file);
    else await fs.writeFile(file, JSON.stringify(config));
    return ckpt;
  }

  it.each([
    ["100", 100, 100],
    ["1", 1, 1],
    ["1e7", 1e7, 1e7],
    ["above 1e7", 1e7 + 1, MAX_POSITIONS],
    ["transformers' no-limit sentinel", 1e30, MAX_POSITIONS],
    ["0", 0, MAX_POSITIONS],
    ["not an integer", 100.5, MAX_POSITIONS],
    ["a string", "100", MAX_POSITIONS],
  ])("model_max_length %s", async (name, value, want) => {
    const ckpt = await withTokenizerConfig(name.replace(/\W/g, "-"), (c) => ({ ...c, model_max_length: value }));
    const m = await JointRewardModel.create({ source: ckpt, rng: RngStream.fromSeed(1, "head") });
    expect(m.maxLength).toBe(want);
    m.dispose();
  });

  it("without model_max_length, or without tokenizer_config.json", async () => {
    const noKey = await withTokenizerConfig("no-key", (c) => Object.fromEntries(Object.entries(c).filter(([k]) => k !== "model_max_length")));
    const noFile = await withTokenizerConfig("no-file", () => undefined);
    for (const ckpt of [noKey, noFile]) {
      const m = await JointRewardModel.create({ source: ckpt, rng: RngStream.fromSeed(1, "head") });
      expect(m.maxLength).toBe(MAX_POSITIONS);
      m.dispose();
    }
  });
});

describe("create and load pass their settings on", () => {
  it("the revision reaches the hub loader: one that is no branch, tag or commit name is refused", async () => {
    await expect(JointRewardModel.create({ source: "acme/tiny", revision: "../x", rng: RngStream.fromSeed(1) })).rejects.toThrow(
      'revision "../x" is not a branch, tag or commit name',
    );
  });

  it("load's device reaches create: a device no backend has is refused", async () => {
    await rm.save(path.join(dir, "rm"));
    await expect(JointRewardModel.load(path.join(dir, "rm"), { device: "cuda:99" })).rejects.toThrow(DeviceUnavailableError);
  });

  it("a folder without reward_model.json loads unfrozen, with the tokenizer's limit", async () => {
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(2, "head"), freezeBackbone: true, maxLength: 12 });
    await m.save(path.join(dir, "rm"));
    m.dispose();
    await fs.rm(path.join(dir, "rm", REWARD_CONFIG_FILE));
    const loaded = await JointRewardModel.load(path.join(dir, "rm"));
    expect(loaded.freezeBackbone).toBe(false);
    expect(loaded.maxLength).toBe(256);
    loaded.dispose();
  });

  it("a model without a token limit saves max_length null (a JSON file ending in a newline) and loads with the tokenizer's", async () => {
    rm.maxLength = undefined;
    await rm.save(path.join(dir, "rm"));
    const text = await fs.readFile(path.join(dir, "rm", REWARD_CONFIG_FILE), "utf8");
    expect(text.endsWith("}\n")).toBe(true);
    expect(JSON.parse(text)).toMatchObject({ max_length: null });
    const loaded = await JointRewardModel.load(path.join(dir, "rm"));
    expect(loaded.maxLength).toBe(256);
    loaded.dispose();
  });
});

describe("training", () => {
  it("an epoch's metrics are the pair-weighted means of its batches' (batches of 5, 5 and 2)", async () => {
    const batches: RewardBatchMetrics[] = [];
    const result = await rm.train(pairs, trainOpts({ epochs: 2, batchSize: 5, onBatch: (m) => void batches.push(m) }));
    expect(batches.map((b) => b.pairs)).toEqual([5, 5, 2, 5, 5, 2]);
    for (const [e, epoch] of result.epochs.entries()) {
      const mine = batches.slice(3 * e, 3 * e + 3);
      expect(epoch.epoch).toBe(e + 1);
      for (const key of ["reward/loss", "reward/accuracy", "reward/margin"] as const) {
        const want = mine.reduce((a, b) => a + b[key] * b.pairs, 0) / pairs.length;
        expect(epoch[key]).toBeCloseTo(want, 6);
      }
    }
    // The batches differ, so a plain mean of them would not do.
    expect(new Set(batches.map((b) => b["reward/loss"])).size).toBeGreaterThan(1);
  });

  it("without maxLength, trains at the model's limit", async () => {
    const short = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(44, "head"), maxLength: 8 });
    const long = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(44, "head") });
    const a = await short.train(pairs, trainOpts());
    const b = await long.train(pairs, trainOpts({ maxLength: 8 }));
    const c = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(44, "head") });
    const full = await c.train(pairs, trainOpts());
    expect(a).toEqual(b);
    expect(full.epochs[0]!["reward/loss"]).not.toBe(a.epochs[0]!["reward/loss"]);
    for (const m of [short, long, c]) m.dispose();
  });

  it("a finite loss with gradients too large for float32 is a NonFiniteRewardError naming the batch", async () => {
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(45, "head"), freezeBackbone: true });
    // Hidden unit 0 becomes enormous while the head ignores it: scores stay finite, but the head's
    // gradient for that unit is of that size, and its square overflows.
    const norm = m.backbone.params.get("model.norm.weight") as tf.Variable;
    norm.assign(tf.tidy(() => tf.concat([tf.tensor1d([1e25]), tf.ones([norm.shape[0]! - 1])])));
    const head = m.head.params.get("reward_head.weight") as tf.Variable;
    head.assign(tf.tidy(() => tf.concat([tf.zeros([1, 1]), tf.slice(head, [0, 1], [1, head.shape[1]! - 1])], 1)));
    expect(m.scores([{ prompts: ["a"], completions: ["b"] }]).every(Number.isFinite)).toBe(true);
    await expect(m.train(pairs, trainOpts())).rejects.toThrow(
      new NonFiniteRewardError("reward model: non-finite gradients (norm Infinity) in epoch 1, batch 1"),
    );
    m.dispose();
  });

  it("a random head starts as PyTorch's nn.Linear: weight and bias uniform in ±1/√hidden", () => {
    const bound = 1 / Math.sqrt(64);
    const values = [...rm.head.params.values()].flatMap((v) => Array.from(v.dataSync()));
    expect(values).toHaveLength(65);
    expect(values.every((x) => Math.abs(x) <= bound)).toBe(true);
    expect(values.some((x) => x < 0)).toBe(true);
    expect(values.some((x) => x > 0)).toBe(true);
  });
});

describe("checks", () => {
  it("train and evaluate refuse a batch size of 0", async () => {
    await expect(rm.train(pairs, trainOpts({ batchSize: 0 }))).rejects.toThrow(
      new RangeError("batchSize (reward_train_batch_size) must be an integer ≥ 1, got 0"),
    );
    expect(() => rm.evaluate(pairs, { batchSize: 0 })).toThrow(new RangeError("batchSize must be an integer ≥ 1, got 0"));
  });

  it("a disposed model says so from every entry point", async () => {
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(46, "head") });
    const row = m.encode("a b c");
    m.dispose();
    const disposed = new RewardModelError("this reward model has been disposed");
    expect(() => m.scoreIds([row])).toThrow(disposed);
    expect(() => m.trainableVariables()).toThrow(disposed);
    await expect(m.train(pairs, trainOpts())).rejects.toThrow(disposed);
    expect(() => m.scoreIds([row])).toThrow(RewardModelError);
    // Even where nothing would be scored: no rows, no pairs.
    expect(() => m.scoreIds([])).toThrow(disposed);
    await expect(m.train([], trainOpts())).rejects.toThrow(disposed);
    const frozen = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(47, "head"), freezeBackbone: true });
    frozen.dispose();
    expect(() => frozen.trainableVariables()).toThrow(disposed);
  });
});

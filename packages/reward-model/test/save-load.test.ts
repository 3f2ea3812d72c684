// save → load round trip: a Hugging Face checkpoint folder for the backbone, the head beside it,
// the settings in reward_model.json; the folder is swapped in whole.
import { existsSync, promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { assertNoTensorLeak, readSafetensors, RngStream } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { JointRewardModel, REWARD_CONFIG_FILE, REWARD_HEAD_FILE, type JointInput } from "../src/index.js";
import { markerPairs, TINY_LLAMA } from "./helpers.js";

const pairs = markerPairs(RngStream.fromSeed(11, "pairs"), 6);
const inputs: JointInput[] = pairs.flatMap((p) => [
  { prompts: p.prompts, completions: p.winner_completions },
  { prompts: p.prompts, completions: p.loser_completions },
]);

describe("JointRewardModel save and load", () => {
  let parent: string;
  let rm: JointRewardModel;
  beforeEach(async () => {
    parent = await fs.mkdtemp(path.join(os.tmpdir(), "pbrl-rm-"));
    rm = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(12, "head"), maxLength: 96 });
    // Train a little so neither the backbone nor the head equals anything on disk already.
    await rm.train(pairs, { learningRate: 0.01, epochs: 1, batchSize: 3, rng: RngStream.fromSeed(13, "shuffle") });
  });
  afterEach(async () => {
    rm.dispose();
    await fs.rm(parent, { recursive: true, force: true });
  });

  it("writes a HF checkpoint folder + reward_head.safetensors + reward_model.json, and nothing else beside it", async () => {
    const dir = path.join(parent, "rm");
    await rm.save(dir);
    const files = (await fs.readdir(dir)).sort();
    expect(files).toEqual(
      ["config.json", "generation_config.json", "model.safetensors", REWARD_HEAD_FILE, REWARD_CONFIG_FILE, "tokenizer.json", "tokenizer_config.json"].sort(),
    );
    expect(await fs.readdir(parent)).toEqual(["rm"]); // no temporary or old folders left behind
    expect(JSON.parse(await fs.readFile(path.join(dir, REWARD_CONFIG_FILE), "utf8"))).toEqual({
      format: "pbrl-joint-reward-model",
      version: 1,
      max_length: 96,
      freeze_backbone: false,
    });
    const head = await readSafetensors(path.join(dir, REWARD_HEAD_FILE));
    expect([...head.tensors.keys()].sort()).toEqual(["reward_head.bias", "reward_head.weight"]);
    expect(head.tensors.get("reward_head.weight")!.tensor.shape).toEqual([1, 64]);

    // The folder is a plain causal-LM checkpoint too: it loads without the reward-model parts,
    // with the trained backbone weights.
    const plain = await loadPretrained(dir);
    try {
      for (const [name, v] of rm.backbone.params) expect(Array.from(plain.model.params.get(name)!.dataSync()), name).toEqual(Array.from(v.dataSync()));
    } finally {
      plain.model.dispose();
    }
  });

  it("load gives identical scores and settings", async () => {
    const dir = path.join(parent, "rm");
    await rm.save(dir);
    const want = rm.scores(inputs);
    const loaded = await JointRewardModel.load(dir);
    try {
      expect(loaded.maxLength).toBe(96);
      expect(loaded.freezeBackbone).toBe(false);
      expect(loaded.scores(inputs)).toEqual(want);
      expect(loaded.evaluate(pairs)).toEqual(rm.evaluate(pairs));
    } finally {
      loaded.dispose();
    }
    const frozen = await JointRewardModel.load(dir, { freezeBackbone: true, maxLength: 64 });
    expect(frozen.freezeBackbone).toBe(true);
    expect(frozen.maxLength).toBe(64);
    frozen.dispose();
  });

  it("saving again replaces the folder whole", async () => {
    const dir = path.join(parent, "rm");
    await rm.save(dir);
    await fs.writeFile(path.join(dir, "stray.txt"), "from an older save");
    await rm.train(pairs.slice(0, 3), { learningRate: 0.01, epochs: 1, batchSize: 3, rng: RngStream.fromSeed(14, "shuffle") });
    await assertNoTensorLeak("save", () => rm.save(dir));
    expect(existsSync(path.join(dir, "stray.txt"))).toBe(false);
    expect(await fs.readdir(parent)).toEqual(["rm"]);
    const loaded = await JointRewardModel.load(dir);
    expect(loaded.scores(inputs)).toEqual(rm.scores(inputs));
    loaded.dispose();
  });

  it("a frozen model saves freeze_backbone: true and loads frozen", async () => {
    const dir = path.join(parent, "frozen");
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(15, "head"), freezeBackbone: true });
    await m.save(dir);
    const want = m.scores(inputs.slice(0, 2));
    m.dispose();
    const loaded = await JointRewardModel.load(dir);
    expect(loaded.freezeBackbone).toBe(true);
    expect(loaded.maxLength).toBe(256); // the tokenizer's model_max_length, saved as such
    expect(loaded.scores(inputs.slice(0, 2))).toEqual(want);
    loaded.dispose();
  });

  it("load explains what is missing or broken", async () => {
    await expect(JointRewardModel.load(TINY_LLAMA)).rejects.toThrow(/reward_head\.safetensors is missing .*JointRewardModel\.create/);
    const dir = path.join(parent, "broken");
    const m = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(16, "head") });
    await m.save(dir);
    m.dispose();
    await fs.writeFile(path.join(dir, REWARD_CONFIG_FILE), "{ not json");
    await expect(JointRewardModel.load(dir)).rejects.toThrow(/reward_model\.json is not valid JSON/);
  });
});

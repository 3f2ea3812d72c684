// A trainer given a dataset source (a JSONL file here) loads it before the run starts and trains
// exactly as when given the same items; a source that cannot be loaded stops the run before
// output_dir is made.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readPairsFile, type TaskItem } from "@pbrl/preference-data";
import { MADPOTrainer, type TrainerDataset } from "../src/index.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

async function run(trainDataset: TrainerDataset, evalDataset: TrainerDataset) {
  const t = new MADPOTrainer({ agentModel: TINY, trainDataset, evalDataset, rewardFunc: countE, args: small({ seed: 7, num_train_epochs: 1 }) });
  try {
    const r = await t.train();
    const pairs = await readPairsFile(path.join(r.outputDir, "preference_pairs.json"));
    const w = (await t.agents())[0]!.model.hostWeights().get("model.layers.0.mlp.up_proj.weight")!.data;
    return { pairs: pairs.pairs, evalSamples: r.evalAfter?.samples.length, w: Array.from(w) };
  } finally {
    t.dispose();
  }
}

const jsonl = (dir: string, name: string, rows: readonly TaskItem[]) => {
  const file = path.join(dir, name);
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
  return file;
};

describe("a dataset source in place of items", () => {
  it("a JSONL file path trains like its items", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-dataset-source-"));
    const train = items.slice(0, 3);
    const evalItems = items.slice(3);
    const fromItems = await run(train, evalItems);
    const fromFiles = await run(jsonl(dir, "train.jsonl", train), { source: jsonl(dir, "eval.jsonl", evalItems) });
    expect(fromItems.pairs.length).toBeGreaterThan(0);
    expect(fromItems.evalSamples).toBe(2);
    expect(fromFiles).toEqual(fromItems);
  });

  it("a source that cannot be loaded is an error naming it, before output_dir is made", async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-dataset-source-")), "out");
    const missing = path.join(out, "..", "nope.jsonl");
    const t = new MADPOTrainer({ agentModel: TINY, trainDataset: missing, rewardFunc: countE, args: small({ output_dir: out }) });
    await expect(t.train()).rejects.toMatchObject({
      name: "DatasetError",
      code: "not_found",
      message: expect.stringMatching(/^train_dataset: .*nope\.jsonl not found/),
    });
    expect(existsSync(out)).toBe(false);
    t.dispose();
  });
});

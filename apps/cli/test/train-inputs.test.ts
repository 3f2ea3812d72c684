// `pbrl train` never writes its run into what it reads: an output_dir that is the dataset folder,
// or lies inside it, is refused before anything is written, naming the setting; the files there
// stay as they were (the run file's dataset and module paths reach the trainer as inputPaths).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { runCli } from "./capture.js";

function project(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-train-inputs-"));
  mkdirSync(path.join(dir, "data"));
  writeFileSync(path.join(dir, "data", "train.jsonl"), ["The cat", "We drink"].map((p, i) => JSON.stringify({ id: `t${i}`, prompt: p })).join("\n") + "\n");
  mkdirSync(path.join(dir, "code"));
  writeFileSync(path.join(dir, "code", "reward.mjs"), "export function reward_func(c) { return c[0].map((a) => a.length); }\n");
  writeFileSync(
    path.join(dir, "run.yaml"),
    [
      `trainer: madpo`,
      `agent_model: ${TINY_LLAMA}`,
      "train_dataset: data",
      "reward_func: code/reward.mjs",
      "preference_num_candidates: 2",
      "max_new_tokens: 4",
    ].join("\n") + "\n",
  );
  return dir;
}

const snapshot = (dir: string) =>
  readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .map((f) => [f, readFileSync(path.join(dir, f), "utf8")]);

describe("pbrl train refuses a run folder in its inputs", () => {
  it.each([
    ["the dataset folder", "data", /output_dir .*data is the train_dataset .*data, which the run reads; pbrl never writes its run files into an input/],
    [
      "a folder inside the dataset folder",
      "data/run",
      /output_dir .*data.run lies inside the train_dataset .*data, which the run reads; pbrl never writes into an input/,
    ],
  ])("%s", async (_what, outputDir, message) => {
    const dir = project();
    const before = snapshot(path.join(dir, "data"));
    const r = await runCli(["train", "--config", path.join(dir, "run.yaml"), `output_dir=${path.join(dir, outputDir)}`, "overwrite_output_dir=true"]);
    expect(r.code, r.err).toBe(2);
    expect(r.err).toMatch(message);
    expect(snapshot(path.join(dir, "data"))).toEqual(before);
  });
});

// Issue 19's acceptance check for dataset sources: the same items from JSONL, CSV, Parquet and a
// (loopback) hub dataset load identically, and the same run from each gives byte-identical round
// files. Also the run-file side: split/subset/revision keys, hub ids left unresolved as paths.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRunDataset } from "../src/dataset-sources.js";
import { buildTrainerConfig, readRunFile, splitRunFile } from "../src/run-config.js";
import { runCli } from "./capture.js";
import { commitOf, startDatasetHub as startHub, type DatasetHubDouble as LoopbackHub } from "@pbrl/test-fixtures";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const FIXTURES = path.resolve(import.meta.dirname, "../../../packages/preference-data/test/fixtures/datasets");
const TINY = TINY_LLAMA;
const ENV = ["HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"];
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));

let hub: LoopbackHub;
const HUB_ID = "pbrl-test/items";
const SOURCES = {
  jsonl: path.join(FIXTURES, "items.jsonl"),
  csv: path.join(FIXTURES, "items.csv"),
  parquet: path.join(FIXTURES, "items.parquet"),
  hub: HUB_ID,
};

beforeAll(async () => {
  for (const k of ENV) delete process.env[k];
  hub = await startHub([
    {
      id: HUB_ID,
      revisions: {
        main: {
          sha: commitOf("sources"),
          files: {
            "README.md": "# items\n",
            "data/train-00000-of-00001.parquet": new Uint8Array(readFileSync(SOURCES.parquet)),
            "data/test-00000-of-00001.csv": "id,topic\ne0,Snow\n",
          },
        },
      },
    },
  ]);
  process.env["HF_ENDPOINT"] = hub.url;
  process.env["HF_HUB_CACHE"] = mkdtempSync(path.join(tmpdir(), "pbrl-sources-cache-"));
});

afterAll(async () => {
  await hub.close();
  for (const k of ENV)
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
});

describe("the same items from every source", () => {
  it("JSONL, CSV, Parquet and a hub dataset load identical items (values and key order)", async () => {
    const loaded = await Promise.all(Object.values(SOURCES).map((source) => loadRunDataset({ key: "train_dataset", source }, { log: () => {} })));
    const texts = loaded.map((items) => JSON.stringify(items));
    expect(loaded[0]).toHaveLength(4);
    expect(new Set(texts).size).toBe(1);
  });

  it("the same madpo_iter run from each source writes byte-identical round files", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-sources-"));
    const reward = path.join(dir, "reward.mjs");
    writeFileSync(reward, "export function reward_func(c) { return c[0].map((a, j) => (a + c[1][j]).split('e').length); }\n");
    const rounds: Record<string, string> = {};
    for (const [name, source] of Object.entries(SOURCES)) {
      const out = path.join(dir, name);
      const r = await runCli([
        "train",
        "trainer=madpo_iter",
        `agent_model=${TINY}`,
        `train_dataset=${source}`,
        'formatters=["Write about {topic}:", "Also {topic}:"]',
        `reward_func=${reward}`,
        "num_iterations=1",
        "preference_num_candidates=4",
        "max_new_tokens=6",
        "seed=11",
        "verbose=false",
        `output_dir=${out}`,
      ]);
      expect(r.code, r.err).toBe(0);
      rounds[name] = readFileSync(path.join(out, "preference_replay", "iteration_0001.json"), "utf8");
    }
    expect(rounds["jsonl"]).toContain('"iteration":1');
    expect(rounds["jsonl"]).toContain("flies over, far"); // the item whose topic holds a line break and a comma
    for (const name of ["csv", "parquet", "hub"]) expect(rounds[name], name).toBe(rounds["jsonl"]);
  });
});

describe("run-file keys for dataset sources", () => {
  it("keeps a hub id as written, resolves file paths against the run file's folder, and accepts the split/subset/revision keys", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-sources-run-"));
    const file = path.join(dir, "run.yaml");
    writeFileSync(
      file,
      [
        "train_dataset: org/name",
        "train_dataset_split: train",
        "train_dataset_config: en",
        "train_dataset_revision: v1",
        "eval_dataset: data/eval.csv",
        "eval_dataset_split: null",
      ].join("\n"),
    );
    const { values } = readRunFile(file, []);
    expect(values["train_dataset"]).toBe("org/name");
    expect(values["eval_dataset"]).toBe(path.join(dir, "data", "eval.csv"));
    const { run } = splitRunFile(values, "madpo");
    expect(run).toMatchObject({ train_dataset_split: "train", train_dataset_config: "en", train_dataset_revision: "v1" });
    expect(() => buildTrainerConfig("madpo", splitRunFile({ train_dataset_splt: "x" }, "madpo").config)).toThrow(
      /train_dataset_splt: unknown key for trainer madpo \(did you mean "train_dataset_split"\?\)/,
    );
  });

  it("pbrl train names a split key without its dataset, and a hub id that does not resolve", async () => {
    const a = await runCli(["train", `agent_model=${TINY}`, "reward_func=summary_expansion", "eval_dataset_split=validation"]);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/eval_dataset_split is set but eval_dataset is not; set eval_dataset/);
    const b = await runCli(["train", `agent_model=${TINY}`, "reward_func=summary_expansion", "train_dataset=pbrl-test/missing"]);
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/train_dataset: hub dataset pbrl-test\/missing: no dataset pbrl-test\/missing on http:\/\/127\.0\.0\.1:\d+ \(HTTP 401\)/);
  });
});

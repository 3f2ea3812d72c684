// Which files of a dataset repository or folder make a split, by the Python `datasets` rules
// (data_files.py): YAML `configs` in README.md, else sharded names, split-named folders, split-named
// files, else all "train"; and the layout of the Hub's Parquet conversion. Also local dataset folders.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { convertedSplits, dataExtension, datasetSplits, globToRegExp } from "../src/datasets/data-files.js";
import { loadDataset } from "../src/index.js";

const splits = (files: string[], readme?: string, config?: string) =>
  Object.fromEntries(datasetSplits(files, readme, config, "ds", "train_dataset_config").splits);

describe("default split detection", () => {
  it("takes data/{split}-NNNNN-of-NNNNN shards first (push_to_hub's layout), with custom split names", () => {
    const files = [
      "README.md",
      ".gitattributes",
      "data/train-00000-of-00002-abc.parquet",
      "data/train-00001-of-00002-def.parquet",
      "data/test-00000-of-00001.parquet",
      "data/extra_hard-00000-of-00001.parquet",
      "other/valid.parquet",
    ];
    expect(splits(files)).toEqual({
      train: ["data/train-00000-of-00002-abc.parquet", "data/train-00001-of-00002-def.parquet"],
      test: ["data/test-00000-of-00001.parquet"],
      extra_hard: ["data/extra_hard-00000-of-00001.parquet"],
    });
  });

  it("then split-named folders, then split-named files (delimited by non-word characters), with synonyms", () => {
    expect(splits(["train/a.jsonl", "train/b.jsonl", "dev/c.jsonl", "my-test.jsonl"])).toEqual({
      train: ["train/a.jsonl", "train/b.jsonl"],
      validation: ["dev/c.jsonl"],
    });
    expect(splits(["train.csv", "my_test_file.csv", "validation1.csv", "testing.csv", "contest.csv"])).toEqual({
      train: ["train.csv"],
      validation: ["validation1.csv"],
      test: ["my_test_file.csv", "testing.csv"],
    });
  });

  it("makes every data file train when no name says otherwise, skipping hidden, ignored and script files", () => {
    expect(
      splits(["README.md", "data.jsonl", "more/part.jsonl", ".hidden/x.jsonl", "__pycache__/y.jsonl", "loader.py", "dataset_infos.json", "LICENSE"]),
    ).toEqual({ train: ["data.jsonl", "more/part.jsonl"] });
  });

  it("keeps the most common format (as datasets infers the builder) and reports formats pbrl does not read", () => {
    expect(splits(["train.parquet", "test.parquet", "notes.csv"])).toEqual({ train: ["train.parquet"], test: ["test.parquet"] });
    const txt = datasetSplits(["train.txt", "test.txt", "meta.json"], undefined, undefined, "ds", "k");
    expect(txt.splits.size).toBe(0);
    expect(txt.unsupported).toEqual([".txt"]);
    expect(datasetSplits(["train.jsonl.gz"], undefined, undefined, "ds", "k").unsupported).toEqual([".jsonl.gz"]);
    expect(dataExtension("data/Train.JSON")).toBe(".json");
  });

  it("has only the default subset: naming another is an error", () => {
    expect(() => datasetSplits(["train.csv"], undefined, "fr", "hub dataset org/x", "train_dataset_config")).toThrow(
      'hub dataset org/x has no subset (config) named "fr"; it has "default": set train_dataset_config to one of them',
    );
  });
});

describe("README.md configs", () => {
  const card = (yaml: string) => `---\n${yaml}\n---\n# A dataset\n\nText.\n`;

  it("maps splits to files with paths and globs, in pattern order", () => {
    const readme = card(
      [
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        "    path:",
        '    - "data/b.csv"',
        '    - "data/a*.csv"',
        "  - split: test",
        "    path: holdout/*.csv",
      ].join("\n"),
    );
    expect(splits(["data/a1.csv", "data/a2.csv", "data/b.csv", "holdout/h.csv", "holdout/deep/x.csv"], readme)).toEqual({
      train: ["data/b.csv", "data/a1.csv", "data/a2.csv"],
      test: ["holdout/h.csv"],
    });
  });

  it("picks the subset asked for, else the one marked default; several and none default is an error listing them", () => {
    const readme = card(
      [
        "configs:",
        "- config_name: en",
        "  data_files: en/*.jsonl",
        "- config_name: fr",
        "  data_files:",
        "    train: fr/train.jsonl",
        "    test: fr/test.jsonl",
        "  default: true",
      ].join("\n"),
    );
    const files = ["en/a.jsonl", "fr/train.jsonl", "fr/test.jsonl"];
    expect(splits(files, readme)).toEqual({ train: ["fr/train.jsonl"], test: ["fr/test.jsonl"] });
    expect(splits(files, readme, "en")).toEqual({ train: ["en/a.jsonl"] });
    expect(() => splits(files, readme, "de")).toThrow('ds has no subset (config) named "de"; it has "en", "fr": set train_dataset_config to one of them');
    const noDefault = card(["configs:", "- config_name: en", "  data_files: en/*.jsonl", "- config_name: fr", "  data_files: fr/*.jsonl"].join("\n"));
    expect(() => splits(files, noDefault)).toThrow('ds has 2 subsets (configs) and none is the default: set train_dataset_config to one of "en", "fr"');
  });

  it("applies the default rules inside a config's data_dir", () => {
    const readme = card(["configs:", "- config_name: small", "  data_dir: small"].join("\n"));
    expect(splits(["small/train.csv", "small/test.csv", "big/train.csv"], readme)).toEqual({ train: ["small/train.csv"], test: ["small/test.csv"] });
  });

  it("ignores a card without configs, and names a broken YAML header", () => {
    expect(splits(["train.csv"], card("license: mit"))).toEqual({ train: ["train.csv"] });
    expect(() => splits(["train.csv"], card("configs: [unclosed"))).toThrow(/^ds: the YAML header of README.md is not valid YAML/);
  });

  it("reads globs as fsspec does: * within a folder, ** across folders, ? and [...] classes", () => {
    expect(globToRegExp("data/*.csv").test("data/x.csv")).toBe(true);
    expect(globToRegExp("data/*.csv").test("data/sub/x.csv")).toBe(false);
    expect(globToRegExp("**/*.csv").test("a/b/x.csv")).toBe(true);
    expect(globToRegExp("**/*.csv").test("x.csv")).toBe(true);
    expect(globToRegExp("part-[0-9]?.json").test("part-3a.json")).toBe(true);
    expect(globToRegExp("part-[!0-9].json").test("part-3.json")).toBe(false);
    expect(globToRegExp("a+b(c).csv").test("a+b(c).csv")).toBe(true);
  });
});

describe("the Hub's Parquet conversion (refs/convert/parquet)", () => {
  it("lists {config}/{split}/NNNN.parquet and partial-{split} folders, and the older {name}-{split}.parquet files", () => {
    const files = [
      ".gitattributes",
      "default/train/0000.parquet",
      "default/train/0001.parquet",
      "default/partial-test/0000.parquet",
      "plain_text/squad-train.parquet",
      "plain_text/squad-validation-00000-of-00002.parquet",
    ];
    const dflt = convertedSplits(files, undefined, "ds", "k");
    expect(dflt.config).toBe("default");
    expect(Object.fromEntries(dflt.splits)).toEqual({
      train: ["default/train/0000.parquet", "default/train/0001.parquet"],
      test: ["default/partial-test/0000.parquet"],
    });
    expect(Object.fromEntries(convertedSplits(files, "plain_text", "ds", "k").splits)).toEqual({
      train: ["plain_text/squad-train.parquet"],
      validation: ["plain_text/squad-validation-00000-of-00002.parquet"],
    });
    expect(convertedSplits([".gitattributes"], undefined, "ds", "k").splits.size).toBe(0);
  });
});

describe("local dataset folders", () => {
  it("load a split of a folder laid out like a hub repository", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-folder-"));
    mkdirSync(path.join(dir, "data"));
    writeFileSync(path.join(dir, "data", "train.jsonl"), '{"q": "a"}\n{"q": "b"}\n');
    writeFileSync(path.join(dir, "data", "test.csv"), "q\nc\n");
    writeFileSync(path.join(dir, "data", "test.jsonl"), '{"q": "c"}\n');
    expect(await loadDataset({ key: "train_dataset", source: dir })).toEqual([{ q: "a" }, { q: "b" }]);
    expect(await loadDataset({ key: "eval_dataset", source: dir }, { defaultSplit: "test" })).toEqual([{ q: "c" }]);
    await expect(loadDataset({ key: "eval_dataset", source: dir, split: "validation" })).rejects.toThrow(
      `eval_dataset: dataset folder ${dir} has no split "validation"; its splits: "train", "test". Set eval_dataset_split to one of them`,
    );
    await expect(loadDataset({ key: "train_dataset", source: dir, revision: "v1" })).rejects.toThrow("train_dataset_revision applies to hub datasets");
  });

  it("a single file takes no split, and a missing path that is not a hub id says what is accepted", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-folder-"));
    writeFileSync(path.join(dir, "a.jsonl"), '{"q": "a"}\n');
    await expect(loadDataset({ key: "train_dataset", source: path.join(dir, "a.jsonl"), split: "test" })).rejects.toThrow(
      `train_dataset_split applies to hub datasets and dataset folders; ${path.join(dir, "a.jsonl")} is a single file`,
    );
    await expect(loadDataset({ key: "train_dataset", source: path.join(dir, "nope.csv") })).rejects.toThrow(
      `train_dataset: ${path.join(dir, "nope.csv")} not found: give a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name`,
    );
    await expect(loadDataset({ key: "train_dataset", source: "hf://datasets/org/name" })).rejects.toThrow(
      'train_dataset: write a hub dataset as its id, "org/name", with the split in train_dataset_split',
    );
  });
});

// Which files of a dataset repository or folder make a split, by the Python `datasets` rules
// (data_files.py): YAML `configs` in README.md, else sharded names, split-named folders, split-named
// files, else all "train"; and the layout of the Hub's Parquet conversion. Also local dataset folders.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
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

// The datasets rules' helpers: a dataset card with a YAML header, the splits a file list gives, and
// what a call throws.
const rulesCard = (yaml: string) => `---\n${yaml}\n---\n# A dataset\n`;
const layout = (files: string[], readme?: string, config?: string) => datasetSplits(files, readme, config, "ds", "train_dataset_config");
const thrown = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
};

describe("the datasets rules, case by case", () => {
  it("takes the extension from the file name only, keeping a compression suffix after a format", () => {
    expect(dataExtension("v1.0/train")).toBe("");
    expect(dataExtension("data/README")).toBe("");
    expect(dataExtension("my.data.csv")).toBe(".csv");
    expect(dataExtension("x.gz")).toBe(".gz");
    expect(dataExtension("d/train.JSONL.GZ")).toBe(".jsonl.gz");
  });

  it("hides only path parts that start with . or __, and ignores the names datasets ignores in any folder", () => {
    expect(splits(["data__/train.jsonl", "__cache/train.jsonl", "meta/dataset_info.json", "x/dummy_data.zip"])).toEqual({ train: ["data__/train.jsonl"] });
  });

  it("sorts the files of every rule, whatever order they are listed in", () => {
    expect(splits(["data/train-00001-of-00002.csv", "data/train-00000-of-00002.csv"])).toEqual({
      train: ["data/train-00000-of-00002.csv", "data/train-00001-of-00002.csv"],
    });
    expect(splits(["train/b.csv", "train/a.csv"])).toEqual({ train: ["train/a.csv", "train/b.csv"] });
    expect(splits(["z.csv", "a.csv"])).toEqual({ train: ["a.csv", "z.csv"] });
    // other split names after train, validation, test, alphabetically (the Parquet conversion lists them in file order)
    expect([...convertedSplits(["c/b-alpha.parquet", "c/a-zeta.parquet", "c/c-test.parquet"], undefined, "ds", "k").splits.keys()]).toEqual([
      "test",
      "alpha",
      "zeta",
    ]);
  });

  it("infers the format from the most common data extension (ties to the first seen), and reports only formats pbrl does not read", () => {
    expect(splits(["a.csv", "b.parquet", "c.parquet"])).toEqual({ train: ["b.parquet", "c.parquet"] });
    expect(splits(["a.csv", "b.parquet"])).toEqual({ train: ["a.csv"] });
    // a split left without files of that format is dropped
    expect(splits(["train.parquet", "valid.csv"])).toEqual({ train: ["train.parquet"] });
    expect(layout(["train.parquet"]).unsupported).toEqual([]);
    expect(layout(["a.txt", "b.txt", "c.csv"]).unsupported).toEqual([".txt"]);
    // files that are no data of any kind are no format, not an unsupported one
    expect(layout(["LICENSE", "notes.md"])).toEqual({ config: "default", configs: ["default"], splits: new Map(), unsupported: [] });
    // data_files may match files that are not data: they do not count
    expect(splits(["LICENSE", "NOTICE", "a.csv"], rulesCard(["configs:", "- config_name: default", '  data_files: "*"'].join("\n")))).toEqual({
      train: ["a.csv"],
    });
  });

  it("reads a YAML header only at the very start of README.md", () => {
    const late = `# Title\n${rulesCard(["configs:", "- config_name: x", "  data_files: x/*.csv"].join("\n"))}`;
    expect(layout(["train.csv", "x/a.csv"], late).configs).toEqual(["default"]);
  });

  it("resolves data_files patterns: a leading / or ./ is the dataset's root, each file once, hidden files only when a pattern names them", () => {
    const files = ["data/c.csv", "data/.b.csv", ".hidden/a.csv", "data/a.csv"];
    const with_ = (data_files: string) => splits(files, rulesCard(["configs:", "- config_name: default", `  data_files: ${data_files}`].join("\n")));
    expect(with_('["/data/c.csv", "./data/a.csv"]')).toEqual({ train: ["data/c.csv", "data/a.csv"] });
    expect(with_('["data/*.csv", "data/a.csv"]')).toEqual({ train: ["data/a.csv", "data/c.csv"] });
    expect(with_('"./data/*.csv"')).toEqual({ train: ["data/a.csv", "data/c.csv"] });
    expect(with_('"data/.b*.csv"')).toEqual({ train: ["data/.b.csv"] });
    expect(with_('".hidden/*.csv"')).toEqual({ train: [".hidden/a.csv"] });
    expect(with_('["data/a.csv", "data/c.csv"]')).toEqual({ train: ["data/a.csv", "data/c.csv"] });
  });

  it("takes a subset without a name as the default one, and a data_dir written ./dir/", () => {
    expect(splits(["a.csv", "b.csv"], rulesCard(["configs:", "- data_files: b.csv"].join("\n")))).toEqual({ train: ["b.csv"] });
    expect(splits(["small/train.csv", "big/train.csv"], rulesCard(["configs:", "- config_name: s", "  data_dir: ./small/"].join("\n")))).toEqual({
      train: ["small/train.csv"],
    });
  });

  it("names what is wrong with configs and data_files in README.md", () => {
    for (const yaml of ["configs: 5", "configs:\n- 1"])
      expect(thrown(() => layout(["a.csv"], rulesCard(yaml)))).toMatchObject({
        name: "DatasetError",
        code: "layout",
        message: "ds: README.md's configs must be a list of {config_name, data_files}",
      });
    expect(thrown(() => layout(["a.csv"], rulesCard(["configs:", "- config_name: d", "  data_files:", "  - split: train"].join("\n"))))).toMatchObject({
      code: "layout",
      message: `ds: README.md's data_files entries need a split name and a path or list of paths; got {"split":"train"}`,
    });
    expect(thrown(() => layout(["a.csv"], rulesCard(["configs:", "- config_name: d", "  data_files:", "    train: 5"].join("\n"))))).toMatchObject({
      code: "layout",
      message: `ds: README.md's data_files entries need a split name and a path or list of paths; got {"split":"train","path":5}`,
    });
    expect(thrown(() => layout(["a.csv"], rulesCard(["configs:", "- config_name: d", "  data_files: 5"].join("\n"))))).toMatchObject({
      code: "layout",
      message: "ds: README.md's data_files must be a path, a list, or a list of {split, path}",
    });
  });

  it("reads globs as fsspec does, case by case", () => {
    expect(globToRegExp("data/**").test("data/a/b.csv")).toBe(true);
    expect(globToRegExp("**.csv").test("a/b.csv")).toBe(true);
    expect(globToRegExp("**/x.csv").test("ax.csv")).toBe(false);
    expect(globToRegExp("**/x.csv").test("a/x.csv")).toBe(true);
    expect(globToRegExp("a*b").test("a/b")).toBe(false);
    expect(globToRegExp("a[]").test("a[]")).toBe(true);
    expect(globToRegExp("a[x").test("a[x")).toBe(true);
    expect(globToRegExp("part-[0-9].json").test("part-a.json")).toBe(false);
    expect(globToRegExp("part-[!0-9].json").test("part-!.json")).toBe(true);
    expect(globToRegExp("part-[!0-9].json").test("part-a.json")).toBe(true);
    expect(globToRegExp("a[\\x]").test("a\\")).toBe(true);
  });
});

describe("the datasets rules, edge by edge", () => {
  const configs = (...lines: string[]) => rulesCard(["configs:", ...lines].join("\n"));

  it("takes only data/{split}-NNNNN-of-NNNNN.ext at the top of data/ as shards, dotted split names included", () => {
    expect(splits(["x/data/extra-00000-of-00001.csv"])).toEqual({ train: ["x/data/extra-00000-of-00001.csv"] });
    expect(splits(["data/extra-00000-of-00001.d/a.csv"])).toEqual({ train: ["data/extra-00000-of-00001.d/a.csv"] });
    expect(splits(["data/extra-00000-of-1.csv"])).toEqual({ train: ["data/extra-00000-of-1.csv"] });
    expect(splits(["data/v1.extra-00000-of-00001.csv"])).toEqual({ "v1.extra": ["data/v1.extra-00000-of-00001.csv"] });
  });

  it("ignores the names datasets ignores by their file name, in a sub-folder too, and drops non-data files before finding splits", () => {
    expect(splits(["a.csv", "meta/config.json", "meta/dataset_info.json"])).toEqual({ train: ["a.csv"] });
    expect(splits(["train.csv", "test/LICENSE"])).toEqual({ train: ["train.csv"] });
  });

  it("reads a YAML header closed by --- with trailing spaces, or at the end of the text; an empty header or configs is none", () => {
    const yaml = ["configs:", "- config_name: x", "  data_files: x/*.csv"].join("\n");
    expect(layout(["train.csv", "x/a.csv"], `---\n${yaml}\n---   \n# T\n`).configs).toEqual(["x"]);
    expect(layout(["train.csv", "x/a.csv"], `---\n${yaml}\n---`).configs).toEqual(["x"]);
    expect(layout(["train.csv"], "---\n\n---\n# T\n")).toEqual({
      config: "default",
      configs: ["default"],
      splits: new Map([["train", ["train.csv"]]]),
      unsupported: [],
    });
    expect(splits(["train.csv"], rulesCard("configs:"))).toEqual({ train: ["train.csv"] });
  });

  it("gives every configs and data_files error the layout code, and names a config or entry that is no object", () => {
    expect(thrown(() => layout(["a.csv"], rulesCard("configs: [unclosed")))).toMatchObject({ name: "DatasetError", code: "layout" });
    expect(thrown(() => layout(["a.csv"], undefined, "fr"))).toMatchObject({ code: "layout" });
    const two = configs("- config_name: en", "  data_files: en/*.csv", "- config_name: fr", "  data_files: fr/*.csv");
    expect(thrown(() => layout(["en/a.csv"], two))).toMatchObject({ code: "layout" });
    for (const yaml of ["- data_files: a.csv\n- 1", "- null"])
      expect(thrown(() => layout(["a.csv"], configs(yaml)))).toMatchObject({
        code: "layout",
        message: "ds: README.md's configs must be a list of {config_name, data_files}",
      });
    const entries = "ds: README.md's data_files entries need a split name and a path or list of paths; got";
    expect(thrown(() => layout(["a.csv"], configs("- config_name: d", '  data_files: ["a.csv", 5]')))).toMatchObject({
      code: "layout",
      message: `${entries} {}`,
    });
    expect(thrown(() => layout(["a.csv"], configs("- config_name: d", "  data_files: [null]")))).toMatchObject({ code: "layout", message: `${entries} {}` });
    expect(thrown(() => layout(["a.csv"], configs("- config_name: d", "  data_files:", "  - path: a.csv")))).toMatchObject({
      code: "layout",
      message: `${entries} {"path":"a.csv"}`,
    });
  });

  it("names a subset without config_name default, and reads a data_dir given as /dir, .//dir// or a nested dir with data_files empty", () => {
    expect(layout(["a.csv", "b.csv"], configs("- data_files: b.csv"))).toMatchObject({ config: "default", configs: ["default"] });
    const files = ["sub/small/train.csv", "sub/small/notes.md", "sub/big/train.csv", "other/x.csv"];
    for (const dir of ["/sub/small", ".//sub/small//", "sub/small"])
      expect(splits(files, configs("- config_name: s", `  data_dir: ${dir}`, "  data_files:"))).toEqual({ train: ["sub/small/train.csv"] });
    expect(splits(["small/a.csv", "bigger/b.csv"], configs("- config_name: s", "  data_dir: small"))).toEqual({ train: ["small/a.csv"] });
  });
});

describe("the Hub's Parquet conversion, edge by edge", () => {
  const converted = (files: string[], config?: string) => convertedSplits(files, config, "ds", "k");

  it("takes only Parquet files that are not hidden, in sorted order, and subsets from folders only", () => {
    expect(converted(["default/train/0001.parquet", "default/train/notes.md", "top.parquet", ".hidden/train/0.parquet", "default/train/0000.parquet"])).toEqual(
      {
        config: "default",
        configs: ["default"],
        splits: new Map([["train", ["default/train/0000.parquet", "default/train/0001.parquet"]]]),
        unsupported: [],
      },
    );
  });

  it("without a subset: the one asked for, else default, and nothing else", () => {
    expect(converted([".gitattributes"], "fr")).toEqual({ config: "fr", configs: [], splits: new Map(), unsupported: [] });
    expect(converted([".gitattributes"])).toEqual({ config: "default", configs: [], splits: new Map(), unsupported: [] });
  });

  it("marks no subset as the default: several need one named", () => {
    expect(() => converted(["a/train/0.parquet", "b/train/0.parquet"])).toThrow(
      'ds (its Parquet conversion) has 2 subsets (configs) and none is the default: set k to one of "a", "b"',
    );
  });

  it("reads split names whole: partial- only in front, dotted names, and passes over files with no split in their name", () => {
    expect(
      Object.fromEntries(converted(["c/x-partial-y/0.parquet", "c/x-a.parquet.b.parquet", "c/x-v1.10.parquet", "c/0000.parquet", "c/a/b/0.parquet"]).splits),
    ).toEqual({
      "x-partial-y": ["c/x-partial-y/0.parquet"],
      "a.parquet.b": ["c/x-a.parquet.b.parquet"],
      "v1.10": ["c/x-v1.10.parquet"],
    });
  });
});

describe("local dataset folders, what is walked", () => {
  it("never walks a hidden folder, even for a pattern that names it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-folder-"));
    mkdirSync(path.join(dir, ".git"));
    writeFileSync(path.join(dir, ".git", "a.csv"), "q\na\n");
    writeFileSync(path.join(dir, "README.md"), ["---", "configs:", "- config_name: default", '  data_files: ".git/*.csv"', "---", ""].join("\n"));
    await expect(loadDataset({ key: "train_dataset", source: dir })).rejects.toThrow(
      `train_dataset: dataset folder ${dir}: it holds no .jsonl, .json, .csv or .parquet files`,
    );
  });

  it("takes files and links, not sockets", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-folder-"));
    writeFileSync(path.join(dir, "a.jsonl"), '{"q": "a"}\n');
    const socket = createServer();
    await new Promise<void>((resolve) => socket.listen(path.join(dir, "b.jsonl"), resolve));
    try {
      expect(await loadDataset({ key: "train_dataset", source: dir })).toEqual([{ q: "a" }]);
    } finally {
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    }
  });

  it("names the run key of the subset in a folder's messages", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-folder-"));
    writeFileSync(path.join(dir, "a.csv"), "q\na\n");
    await expect(loadDataset({ key: "eval_dataset", source: dir, config: "fr" })).rejects.toThrow(
      `eval_dataset: dataset folder ${dir} has no subset (config) named "fr"; it has "default": set eval_dataset_config to one of them`,
    );
  });
});

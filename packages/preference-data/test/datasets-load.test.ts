// loadDataset's choice between a file, a dataset folder and a hub id, and the request errors a
// user fixes in the run file: an hf:// URL, a split, subset or revision for a single file, a
// missing path, a split a folder lacks. Real files and folders in a temporary directory.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadDataset } from "../src/index.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-load-"));
const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e as Error,
  );
const folder = (files: Record<string, string | Buffer>): string => {
  const dir = tmp();
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), text);
  }
  return dir;
};
const ENV = ["HF_HUB_OFFLINE", "HF_HUB_CACHE", "HF_ENDPOINT"];
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
afterEach(() => {
  for (const k of ENV)
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
});

describe("what a dataset source is", () => {
  it("an hf:// URL is refused, naming the id to write instead (with or without datasets/, in any case, a revision dropped)", async () => {
    for (const [source, id] of [
      ["hf://datasets/org/name", "org/name"],
      ["hf://org/name", "org/name"],
      ["HF://Datasets/org/name@v1.0", "org/name"],
      ["hf://org/datasets/x", "org/datasets/x"],
    ] as const) {
      const err = await failure(loadDataset({ key: "eval_dataset", source }));
      expect(err).toMatchObject({
        name: "DatasetError",
        code: "invalid_request",
        message: `eval_dataset: write a hub dataset as its id, "${id}", with the split in eval_dataset_split (and a revision in eval_dataset_revision), not as an hf:// URL`,
      });
    }
  });

  it("a missing path says what is accepted, and only a path with a colon gets the hint about hub ids", async () => {
    const dir = tmp();
    const accepted = "give a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name";
    const missing = path.join(dir, "nope.jsonl");
    expect(await failure(loadDataset({ key: "train_dataset", source: missing }))).toMatchObject({
      name: "DatasetError",
      code: "not_found",
      message: `train_dataset: ${missing} not found: ${accepted}`,
    });
    // a string source, and no key: messages say "dataset"
    expect((await failure(loadDataset(missing))).message).toBe(`dataset: ${missing} not found: ${accepted}`);
    // hf:// only at the start is a URL
    expect(await failure(loadDataset({ key: "train_dataset", source: "my-hf://org/name" }))).toMatchObject({
      code: "not_found",
      message: `train_dataset: my-hf://org/name not found: ${accepted} (a hub dataset is written org/name, with the split in train_dataset_split)`,
    });
    expect((await failure(loadDataset({ key: "train_dataset", source: "org/name:train" }))).message).toBe(
      `train_dataset: org/name:train not found: ${accepted} (a hub dataset is written org/name, with the split in train_dataset_split)`,
    );
  });

  it("a hub-like id with a data extension (any case) is a missing file, not a hub dataset", async () => {
    process.env["HF_HUB_OFFLINE"] = "1";
    process.env["HF_HUB_CACHE"] = tmp();
    for (const source of ["org/data.csv", "org/DATA.CSV"])
      expect(await failure(loadDataset({ key: "train_dataset", source }))).toMatchObject({
        code: "not_found",
        message: `train_dataset: ${source} not found: give a .jsonl, .json, .csv or .parquet file, a dataset folder, or a hub dataset id org/name`,
      });
  });

  it("a single file takes no split, subset or revision, naming the first one set", async () => {
    const dir = folder({ "a.jsonl": '{"q": "a"}\n' });
    const file = path.join(dir, "a.jsonl");
    for (const [req, extra] of [
      [{ split: "test", config: "en" }, "split"],
      [{ config: "en", revision: "v1" }, "config"],
      [{ revision: "v1" }, "revision"],
    ] as const) {
      expect(await failure(loadDataset({ key: "eval_dataset", source: file, ...req }))).toMatchObject({
        name: "DatasetError",
        code: "invalid_request",
        message: `eval_dataset_${extra} applies to hub datasets and dataset folders; ${file} is a single file (leave eval_dataset_${extra} unset)`,
      });
    }
    expect(await loadDataset({ key: "eval_dataset", source: file })).toEqual([{ q: "a" }]);
  });

  it("a hub revision that is no branch, tag or commit name is refused before the hub is asked", async () => {
    expect(await failure(loadDataset({ key: "eval_dataset", source: "org/name", revision: "../../etc" }))).toMatchObject({
      name: "DatasetError",
      code: "invalid_request",
      message: 'eval_dataset_revision: "../../etc" is not a branch, tag or commit name',
    });
  });

  it("a folder takes no revision", async () => {
    const dir = folder({ "train.jsonl": '{"q": "a"}\n' });
    expect(await failure(loadDataset({ key: "train_dataset", source: dir, revision: "v1" }))).toMatchObject({
      name: "DatasetError",
      code: "invalid_request",
      message: `train_dataset_revision applies to hub datasets; ${dir} is a local folder`,
    });
  });
});

describe("dataset folders", () => {
  it("read every file of the split, shard after shard, and the split asked for before the default one", async () => {
    const dir = folder({
      "data/train-00000-of-00002.jsonl": '{"q": 1}\n{"q": 2}\n',
      "data/train-00001-of-00002.jsonl": '{"q": 3}\n',
      "data/test-00000-of-00001.jsonl": '{"q": 4}\n',
    });
    expect(await loadDataset({ key: "train_dataset", source: dir })).toEqual([{ q: 1 }, { q: 2 }, { q: 3 }]);
    expect(await loadDataset({ key: "train_dataset", source: dir, split: "train" }, { defaultSplit: "test" })).toEqual([{ q: 1 }, { q: 2 }, { q: 3 }]);
    expect(await loadDataset({ key: "eval_dataset", source: dir }, { defaultSplit: "test" })).toEqual([{ q: 4 }]);
  });

  it("follow a link to a data file, and never read inside a hidden folder", async () => {
    const outside = folder({ "items.jsonl": '{"q": "linked"}\n' });
    const dir = folder({ ".cache/train.jsonl": '{"q": "hidden"}\n' });
    symlinkSync(path.join(outside, "items.jsonl"), path.join(dir, "train.jsonl"));
    expect(await loadDataset({ key: "train_dataset", source: dir })).toEqual([{ q: "linked" }]);
  });

  it("without data files pbrl reads: an error saying what the folder holds", async () => {
    const empty = folder({ "README.md": "# nothing\n", "notes/a.md": "x" });
    expect(await failure(loadDataset({ key: "train_dataset", source: empty }))).toMatchObject({
      name: "DatasetError",
      code: "layout",
      message: `train_dataset: dataset folder ${empty}: it holds no .jsonl, .json, .csv or .parquet files`,
    });
    const text = folder({ "train.txt": "a\n", "test.tsv": "b\n" });
    expect(await failure(loadDataset({ key: "train_dataset", source: text }))).toMatchObject({
      code: "layout",
      message: `train_dataset: dataset folder ${text}: its data files are .txt, .tsv, which pbrl does not read`,
    });
  });

  it("a missing split names the subset when there are several, and says slices are not supported", async () => {
    const card = ["---", "configs:", "- config_name: en", "  data_files: en/*.jsonl", "- config_name: fr", "  data_files: fr/*.jsonl", "---", ""].join("\n");
    const dir = folder({ "README.md": card, "en/a.jsonl": '{"q": "en"}\n', "fr/a.jsonl": '{"q": "fr"}\n' });
    expect(await loadDataset({ key: "train_dataset", source: dir, config: "fr" })).toEqual([{ q: "fr" }]);
    expect(await failure(loadDataset({ key: "train_dataset", source: dir, config: "fr", split: "test" }))).toMatchObject({
      code: "layout",
      message: `train_dataset: dataset folder ${dir} (subset "fr") has no split "test"; its splits: "train". Set train_dataset_split to one of them`,
    });
    expect((await failure(loadDataset({ key: "train_dataset", source: dir, config: "en", split: "train[:100]" }))).message).toBe(
      `train_dataset: dataset folder ${dir} (subset "en") has no split "train[:100]"; its splits: "train". Set train_dataset_split to one of them; slices like train[:100] are not supported`,
    );
    const one = folder({ "train.jsonl": '{"q": 1}\n' });
    expect((await failure(loadDataset({ key: "train_dataset", source: one, split: "a[1]b" }))).message).toBe(
      `train_dataset: dataset folder ${one} has no split "a[1]b"; its splits: "train". Set train_dataset_split to one of them`,
    );
  });

  it("a README.md that is not UTF-8 is named with the run key", async () => {
    const dir = folder({ "README.md": Buffer.from([0x2d, 0xe9]), "train.jsonl": '{"q": 1}\n' });
    expect(await failure(loadDataset({ key: "eval_dataset", source: dir }))).toMatchObject({
      code: "invalid_file",
      message: `eval_dataset: README.md ${path.join(dir, "README.md")} is not valid UTF-8 text: invalid UTF-8 at byte offset 1 (line 1; bytes 0xE9); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)`,
    });
  });
});

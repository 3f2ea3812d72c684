// A hostile hub cannot make a dataset download write outside the Hugging Face cache, nor read
// without end: the loopback hub (dataset-hub-server.ts in @pbrl/test-fixtures) gives a commit id that is a path, file
// names that lead out, a file list that links back to itself or is huge, bodies longer than listed
// (plain and as gzip bombs); the cache holds links that lead out of it. After every case each file
// outside the cache is byte for byte what it was (sha256), and every link pbrl left in the cache stays in it.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fileDigests, linksLeaving } from "@pbrl/test-fixtures";
import { loadDataset } from "../src/index.js";
import {
  commitOf,
  startDatasetHub as startHub,
  type DatasetHubOptions as HubOptions,
  type DatasetHubRepo as HubRepo,
  type DatasetHubDouble as LoopbackHub,
} from "@pbrl/test-fixtures";

const FIXTURES = path.resolve(import.meta.dirname, "fixtures/datasets");
const PARQUET = new Uint8Array(readFileSync(path.join(FIXTURES, "items.parquet")));
const ENV = [
  "HF_ENDPOINT",
  "HF_HUB_CACHE",
  "HF_HOME",
  "HF_TOKEN",
  "HUGGING_FACE_HUB_TOKEN",
  "HF_HUB_OFFLINE",
  "HF_DATASETS_OFFLINE",
  "HF_HUB_DOWNLOAD_TIMEOUT",
];
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const ITEMS: HubRepo = {
  id: "evil/items",
  revisions: {
    main: { sha: commitOf("evil main"), files: { "README.md": "# Items\n", "data/train-00000-of-00001.parquet": PARQUET } },
    v1: { sha: commitOf("evil v1"), files: { "train.jsonl": '{"id": "old"}\n' } },
  },
};

let hub: LoopbackHub | undefined;
let world: string;
let cache: string;
let before: Record<string, string>;
let planted: string[];

async function serve(repos: HubRepo[], options: HubOptions = {}): Promise<void> {
  hub = await startHub(repos, options);
  process.env["HF_ENDPOINT"] = hub.url;
}
const load = (source: string, revision?: string) =>
  loadDataset({ key: "train_dataset", source, ...(revision !== undefined ? { revision } : {}) }, { log: () => undefined });
const jsonlItems = () => loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.jsonl") });
const plant = (target: string, link: string) => {
  mkdirSync(path.dirname(link), { recursive: true });
  symlinkSync(target, link);
  planted.push(link);
};

beforeEach(() => {
  for (const k of ENV) delete process.env[k];
  world = mkdtempSync(path.join(tmpdir(), "pbrl-hostile-data-"));
  cache = path.join(world, "cache");
  mkdirSync(cache);
  for (const [file, text] of [
    ["victim/.bashrc", "export PATH=/usr/bin\n"],
    ["victim/train.jsonl", '{"id": "mine"}\n'],
    ["elsewhere/keep.txt", "kept\n"],
  ] as const) {
    mkdirSync(path.dirname(path.join(world, file)), { recursive: true });
    writeFileSync(path.join(world, file), text);
  }
  before = fileDigests(world, [cache]);
  planted = [];
  process.env["HF_HUB_CACHE"] = cache;
});

afterEach(async () => {
  await hub?.close();
  hub = undefined;
  for (const k of ENV)
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  // The point of every case: nothing outside the cache changed, and the cache has no link leading out.
  expect(fileDigests(world, [cache])).toEqual(before);
  expect(linksLeaving(cache).filter((l) => !planted.some((p) => l.startsWith(`${p} -> `)))).toEqual([]);
});

const partials = (repo: string) => {
  const blobs = path.join(cache, `datasets--${repo.replace("/", "--")}`, "blobs");
  try {
    return readdirSync(blobs).filter((f) => f.endsWith(".incomplete"));
  } catch {
    return [];
  }
};

describe("a hostile hub and dataset downloads", () => {
  it("writes every path of a faithful download inside the cache: blobs, snapshot links, refs/ and trees/", async () => {
    await serve([ITEMS]);
    expect(await load("evil/items")).toEqual(await jsonlItems());
    expect(await load("evil/items", "v1")).toEqual([{ id: "old" }]);
    const repo = path.join(cache, "datasets--evil--items");
    expect(readFileSync(path.join(repo, "refs", "v1"), "utf8")).toBe(commitOf("evil v1"));
    expect(readdirSync(path.join(repo, "trees")).sort()).toEqual([`${commitOf("evil main")}.json`, `${commitOf("evil v1")}.json`].sort());
    expect(Object.keys(fileDigests(cache)).every((p) => p.startsWith("datasets--evil--items"))).toBe(true);
  });

  it("refuses a commit id that is a path, and never downloads files whose names lead out or are not plain paths", async () => {
    await serve([
      { id: "evil/commit", revisions: { main: { sha: "../../../victim", files: { "train.jsonl": '{"id": 1}\n' } } } },
      {
        id: "evil/names",
        revisions: {
          main: {
            sha: commitOf("evil names"),
            files: { "../../../victim/train.jsonl": '{"id": "x"}\n', "a\\..\\..\\b.jsonl": '{"id": "y"}\n', "c/./train.jsonl": '{"id": "z"}\n' },
          },
        },
      },
    ]);
    await expect(load("evil/commit")).rejects.toThrow(/gave no commit for revision main \(sha "\.\.\/\.\.\/\.\.\/victim"\)/);
    await expect(load("evil/names")).rejects.toThrow(/evil\/names: it holds no data files/);
  });

  it("stops a file list that links back to a page it already sent", { timeout: 20_000 }, async () => {
    await serve([ITEMS], { selfLinkedTree: true });
    await expect(load("evil/items")).rejects.toThrow(
      /^train_dataset: hub dataset evil\/items: the file list of evil\/items at [0-9a-f]{40} from http:\/\/127\.0\.0\.1:\d+ links back to a page it already sent \(http:\/\/127\.0\.0\.1:\d+\/api\/datasets\/evil\/items\/tree\/[0-9a-f]{40}\?recursive=true&expand=false\), so it would never end/,
    );
    await expect(load("evil/items")).rejects.toMatchObject({ name: "DatasetError", code: "hub" });
  });

  it("stops a file list whose pages never end after 10000 of them", { timeout: 120_000 }, async () => {
    await serve([ITEMS], { endlessTree: true });
    const err = await load("evil/items").catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "DatasetError", code: "hub" });
    expect((err as Error).message).toMatch(
      /^train_dataset: hub dataset evil\/items: the file list of evil\/items at [0-9a-f]{40} from http:\/\/127\.0\.0\.1:\d+ runs past 10000 pages, more than pbrl reads$/,
    );
  });

  it("refuses a file list larger than 64 MiB with an error naming the dataset, instead of reading it into one string", async () => {
    await serve([ITEMS], { treePadding: 64 * 2 ** 20 });
    await expect(load("evil/items")).rejects.toThrow(
      /^train_dataset: hub dataset evil\/items: the file list of evil\/items at [0-9a-f]{40} from http:\/\/127\.0\.0\.1:\d+ is larger than 64 MiB, more than pbrl reads of one hub answer; check HF_ENDPOINT, or, for a dataset with this many files, download the files you need/,
    );
    await expect(load("evil/items")).rejects.toMatchObject({ name: "DatasetError", code: "hub" });
  });

  it("stops reading a body longer than the size the file list gives, keeping none of it (from the hub and from its CDN)", async () => {
    await serve([ITEMS], { overlong: { "README.md": 10 } });
    await expect(load("evil/items")).rejects.toThrow(
      /^train_dataset: hub dataset evil\/items: README\.md from http:\/\/127\.0\.0\.1:\d+ is longer than the 8 bytes the hub lists; pbrl stopped reading it and kept none of it/,
    );
    await hub!.close();
    await serve([ITEMS], { overlong: { "data/train-00000-of-00001.parquet": 5_000_000 } });
    await expect(load("evil/items")).rejects.toThrow(
      /data\/train-00000-of-00001\.parquet from .* is longer than the 837 bytes the hub lists; pbrl stopped reading it/,
    );
    expect(partials("evil/items")).toEqual([]);
  });

  it("does not inflate a gzip body past the listed size (a gzip bomb), and reads one that inflates to exactly the file", async () => {
    const file = "data/train-00000-of-00001.parquet";
    await serve([ITEMS], { gzip: [file], overlong: { [file]: 64_000_000 } });
    await expect(load("evil/items")).rejects.toThrow(/data\/train-00000-of-00001\.parquet from .* is longer than the 837 bytes the hub lists/);
    expect(partials("evil/items")).toEqual([]);
    await hub!.close();
    await serve([ITEMS], { gzip: [file, "README.md"] });
    expect(await load("evil/items")).toEqual(await jsonlItems());
  });

  it("refuses to write through a link in the cache that leads out of it (blobs/ or trees/)", async () => {
    await serve([ITEMS]);
    const repo = path.join(cache, "datasets--evil--items");
    plant(path.join(world, "elsewhere"), path.join(repo, "blobs"));
    await expect(load("evil/items")).rejects.toThrow(
      new RegExp(
        `^train_dataset: hub dataset evil/items: refusing to write there: ${esc(path.join(repo, "blobs"))}/\\S+ leads out of the Hugging Face cache ${esc(cache)} ` +
          `through the symbolic link ${esc(path.join(repo, "blobs"))} \\(to ${esc(path.join(world, "elsewhere"))}/\\S+\\); pbrl writes downloads only inside the cache`,
      ),
    );
    await expect(load("evil/items")).rejects.toMatchObject({ name: "DatasetError", code: "hub" });
    const other: HubRepo = { ...ITEMS, id: "evil/trees" };
    await hub!.close();
    await serve([other]);
    plant(path.join(world, "victim"), path.join(cache, "datasets--evil--trees", "trees"));
    await expect(load("evil/trees")).rejects.toThrow(
      /refusing to write there: .*trees\/[0-9a-f]{40}\.json leads out of the Hugging Face cache .* through the symbolic link/,
    );
    await expect(load("evil/trees")).rejects.toMatchObject({ name: "DatasetError", code: "hub" });
  });

  it("HF_HUB_DOWNLOAD_TIMEOUT beyond what a timer can hold (3000000 s) waits as long as it can, instead of timing out at once", async () => {
    await serve([ITEMS], { cdnDelayMs: 50 });
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "3000000";
    expect(await load("evil/items")).toEqual(await jsonlItems());
  });
});

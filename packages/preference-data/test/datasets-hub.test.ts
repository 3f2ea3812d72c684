// Hub datasets against a loopback hub (dataset-hub-server.ts in @pbrl/test-fixtures): HF_ENDPOINT points at it and
// HF_HUB_CACHE at a temporary folder. Downloads land in huggingface_hub's cache layout; a second
// load works with the hub stopped or HF_HUB_OFFLINE=1; HF_TOKEN goes to the hub only and is never
// printed; errors name the dataset and the fix.
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadDataset, type DatasetRequest } from "../src/index.js";
import { commitOf, startDatasetHub as startHub, type DatasetHubRepo as HubRepo, type DatasetHubDouble as LoopbackHub } from "@pbrl/test-fixtures";

const FIXTURES = path.resolve(import.meta.dirname, "fixtures/datasets");
const fixture = (f: string) => new Uint8Array(readFileSync(path.join(FIXTURES, f)));
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

const MAIN = commitOf("items main");
const V1 = commitOf("items v1");
const ITEMS: HubRepo = {
  id: "pbrl-test/items",
  revisions: {
    main: {
      sha: MAIN,
      files: {
        ".gitattributes": "*.parquet filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": "---\nlicense: mit\n---\n# Items\n",
        "data/train-00000-of-00001.parquet": fixture("items.parquet"),
        "data/test-00000-of-00001.parquet": fixture("conversational.parquet"),
      },
    },
    v1: { sha: V1, files: { "train.jsonl": '{"id": "old"}\n' } },
  },
};
const SUBSETS: HubRepo = {
  id: "pbrl-test/subsets",
  revisions: {
    main: {
      sha: commitOf("subsets"),
      files: {
        "README.md": [
          "---",
          "configs:",
          "- config_name: en",
          "  data_files:",
          "  - split: train",
          "    path: en/*.csv",
          "- config_name: fr",
          "  data_files:",
          "  - split: train",
          "    path: fr/*.csv",
          "---",
          "",
        ].join("\n"),
        "en/part-0.csv": fixture("items.csv"),
        "fr/part-0.csv": "id,topic\nf0,Le chat\n",
      },
    },
  },
};
// Data only in a format pbrl does not read: the Hub's Parquet conversion stands in.
const TEXT_ONLY: HubRepo = {
  id: "pbrl-test/text-only",
  revisions: {
    main: { sha: commitOf("text main"), files: { "README.md": "# plain text\n", "train.txt": "The cat\nWe drink\n" } },
    "refs/convert/parquet": { sha: commitOf("text parquet"), files: { ".gitattributes": "", "default/train/0000.parquet": fixture("items.parquet") } },
  },
};
const GATED: HubRepo = { id: "pbrl-test/gated", gated: true, revisions: { main: { sha: commitOf("gated"), files: { "train.csv": "id\ng0\n" } } } };

let hub: LoopbackHub;
let cache: string;
let logs: string[];
const load = (req: DatasetRequest) => loadDataset({ key: "train_dataset", ...req }, { log: (l) => logs.push(l) });
const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e as Error,
  );
const jsonlItems = () => loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.jsonl") });

beforeEach(async () => {
  for (const k of ENV) delete process.env[k];
  hub = await startHub([ITEMS, SUBSETS, TEXT_ONLY, GATED], { pageSize: 2 });
  cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-cache-"));
  process.env["HF_ENDPOINT"] = hub.url;
  process.env["HF_HUB_CACHE"] = cache;
  logs = [];
});

afterEach(async () => {
  await hub.close();
  for (const k of ENV)
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
});

describe("hub datasets", () => {
  it("downloads a split into the Hugging Face cache layout and reads it", async () => {
    expect(await load({ source: "pbrl-test/items" })).toEqual(await jsonlItems());
    const repo = path.join(cache, "datasets--pbrl-test--items");
    expect(readFileSync(path.join(repo, "refs", "main"), "utf8")).toBe(MAIN);
    // the file list of the commit, in huggingface_hub's trees/{commit}.json format (all pages of the listing)
    const tree = JSON.parse(readFileSync(path.join(repo, "trees", `${MAIN}.json`), "utf8")) as {
      format_version: number;
      files: Record<string, { size: number; blob_id: string; lfs_sha256?: string }>;
    };
    expect(tree.format_version).toBe(1);
    expect(Object.keys(tree.files)).toEqual([".gitattributes", "README.md", "data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]);
    // snapshot files link to blobs named by their etag (the LFS sha256 for Parquet)
    const sha256 = createHash("sha256").update(fixture("items.parquet")).digest("hex");
    expect(tree.files["data/train-00000-of-00001.parquet"]!.lfs_sha256).toBe(sha256);
    const link = path.join(repo, "snapshots", MAIN, "data", "train-00000-of-00001.parquet");
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(path.join("..", "..", "..", "blobs", sha256));
    expect(existsSync(path.join(repo, "snapshots", MAIN, "README.md"))).toBe(true);
    // only the split asked for is downloaded
    expect(existsSync(path.join(repo, "snapshots", MAIN, "data", "test-00000-of-00001.parquet"))).toBe(false);
    expect(logs).toEqual([
      expect.stringMatching(/^pbrl: train_dataset: hub dataset pbrl-test\/items: downloading README\.md \(29 B\) from http:\/\/127\.0\.0\.1:\d+$/),
      expect.stringMatching(
        /^pbrl: train_dataset: hub dataset pbrl-test\/items: downloading data\/train-00000-of-00001\.parquet \(837 B\) from http:\/\/127\.0\.0\.1:\d+$/,
      ),
    ]);
  });

  it("only main falls back to the Parquet conversion: not a commit asked for by its hash, online or offline", async () => {
    const sha = commitOf("text main");
    const why = `train_dataset: hub dataset pbrl-test/text-only@${sha}: its data files are .txt, which pbrl does not read, and there is no Parquet conversion of it (branch refs/convert/parquet)`;
    expect(await failure(load({ source: "pbrl-test/text-only", revision: sha }))).toMatchObject({ code: "layout", message: expect.stringContaining(why) });
    expect(await load({ source: "pbrl-test/text-only" })).toEqual(await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.parquet") }));
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await failure(load({ source: "pbrl-test/text-only", revision: sha }))).toMatchObject({ code: "layout", message: expect.stringContaining(why) });
  });

  it("takes a saved file list of up to twice 64 MiB from trees/, and lists a larger one again", { timeout: 60_000 }, async () => {
    await load({ source: "pbrl-test/items" });
    const saved = path.join(cache, "datasets--pbrl-test--items", "trees", `${MAIN}.json`);
    const listing = readFileSync(saved);
    const limit = 2 * 64 * 2 ** 20;
    for (const [size, listed] of [
      [limit, false],
      [limit + 1, true],
    ] as const) {
      writeFileSync(saved, Buffer.concat([listing, Buffer.alloc(size - listing.length, 0x20)]));
      const before = hub.requests.length;
      expect(await load({ source: "pbrl-test/items" })).toEqual(await jsonlItems());
      expect(
        hub.requests.slice(before).some((r) => r.path.includes("/tree/")),
        String(size),
      ).toBe(listed);
    }
  });

  it("a snapshot file that is a plain copy, without its blob (huggingface_hub without symbolic links), is read as it is", async () => {
    await load({ source: "pbrl-test/items" });
    const repo = path.join(cache, "datasets--pbrl-test--items");
    const file = path.join(repo, "snapshots", MAIN, "data", "train-00000-of-00001.parquet");
    const files = [path.join(repo, "snapshots", MAIN, "README.md"), file];
    const copies = files.map((f) => readFileSync(f));
    rmSync(path.join(repo, "blobs"), { recursive: true });
    files.forEach((f, i) => {
      rmSync(f);
      writeFileSync(f, copies[i]!);
    });
    logs = [];
    const before = hub.requests.length;
    expect(await load({ source: "pbrl-test/items" })).toEqual(await jsonlItems());
    expect(logs).toEqual([]);
    expect(hub.requests.slice(before).map((r) => r.path)).toEqual([`/api/datasets/pbrl-test/items/revision/main`]);
    expect(lstatSync(file).isSymbolicLink()).toBe(false);
  });

  it("a cached blob whose snapshot link is gone is linked again without a download line", async () => {
    await load({ source: "pbrl-test/items" });
    rmSync(path.join(cache, "datasets--pbrl-test--items", "snapshots", MAIN, "data", "train-00000-of-00001.parquet"));
    logs = [];
    expect(await load({ source: "pbrl-test/items" })).toEqual(await jsonlItems());
    expect(logs).toEqual([]);
  });

  it("eval_dataset reads the test split by default; a missing split lists the splits there are", async () => {
    const test = await load({ key: "eval_dataset", source: "pbrl-test/items", split: "test" });
    expect(test.map((r) => r["id"])).toEqual([1, 2]);
    await expect(load({ source: "pbrl-test/items", split: "validation" })).rejects.toThrow(
      'train_dataset: hub dataset pbrl-test/items has no split "validation"; its splits: "train", "test". Set train_dataset_split to one of them',
    );
  });

  it("a second load uses the cache: with the hub stopped (saying so), and with HF_HUB_OFFLINE=1 (asking nothing)", async () => {
    const first = await load({ source: "pbrl-test/items" });
    await hub.close();
    logs = [];
    expect(await load({ source: "pbrl-test/items" })).toEqual(first);
    expect(logs).toEqual([
      expect.stringMatching(
        /^pbrl: train_dataset: hub dataset pbrl-test\/items: cannot reach http:\/\/127\.0\.0\.1:\d+ \((ECONNREFUSED|UND_ERR_SOCKET)(, \d+ tries)?\); using the cached copy in .*datasets--pbrl-test--items$/,
      ),
    ]);
    hub = await startHub([ITEMS]);
    process.env["HF_ENDPOINT"] = hub.url;
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await load({ source: "pbrl-test/items" })).toEqual(first);
    expect(hub.requests).toEqual([]);
  });

  it("online again, a cached commit downloads nothing more", async () => {
    await load({ source: "pbrl-test/items" });
    const before = hub.requests.length;
    await load({ source: "pbrl-test/items" });
    expect(hub.requests.slice(before).map((r) => r.path)).toEqual([`/api/datasets/pbrl-test/items/revision/main`]);
  });

  it("offline, or with the hub unreachable, without a cached copy: an error naming the dataset and the fix", async () => {
    process.env["HF_HUB_OFFLINE"] = "1";
    await expect(load({ source: "pbrl-test/items" })).rejects.toThrow(
      `train_dataset: hub dataset pbrl-test/items (split "train") is not in the Hugging Face cache (${path.join(cache, "datasets--pbrl-test--items")}) and HF_HUB_OFFLINE is set: run once without HF_HUB_OFFLINE`,
    );
    delete process.env["HF_HUB_OFFLINE"];
    await hub.close();
    const err = await failure(load({ source: "pbrl-test/items" }));
    expect(err).toMatchObject({ name: "DatasetError", code: "unavailable" });
    expect(err.message).toMatch(
      /^train_dataset: hub dataset pbrl-test\/items: cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\), and it is not in the Hugging Face cache \(.*\); check the network and HF_ENDPOINT/,
    );
  });

  it("drops a download that stalls for HF_HUB_DOWNLOAD_TIMEOUT seconds and tries again", async () => {
    await hub.close();
    hub = await startHub([ITEMS], { stallCdnOnce: true });
    process.env["HF_ENDPOINT"] = hub.url;
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "0.3";
    const items = await loadDataset({ key: "train_dataset", source: "pbrl-test/items" }, { log: () => undefined, hub: { retry: { baseDelayMs: 10 } } });
    expect(items).toEqual(await jsonlItems());
    expect(hub.requests.filter((r) => r.server === "cdn")).toHaveLength(2);
  });

  it("gives up on a download that stalls every time, naming the file, and keeps what it got for the next try", async () => {
    await hub.close();
    hub = await startHub([ITEMS], { stallCdn: true });
    process.env["HF_ENDPOINT"] = hub.url;
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "0.3";
    await expect(
      loadDataset({ key: "train_dataset", source: "pbrl-test/items" }, { log: () => undefined, hub: { retry: { retries: 1, baseDelayMs: 10 } } }),
    ).rejects.toThrow(
      /^train_dataset: hub dataset pbrl-test\/items: downloading data\/train-00000-of-00001\.parquet of pbrl-test\/items failed 2 times \(last: no data for 0\.3 s\); .* are kept in .*\.incomplete and the next try resumes from there/,
    );
    expect(hub.requests.filter((r) => r.server === "cdn")).toHaveLength(2);
    expect(readdirSync(path.join(cache, "datasets--pbrl-test--items", "blobs")).filter((f) => f.endsWith(".incomplete"))).toHaveLength(1);
  });

  it("an offline cache of one split does not stand in for another", async () => {
    await load({ source: "pbrl-test/items" });
    process.env["HF_HUB_OFFLINE"] = "1";
    await expect(load({ key: "eval_dataset", source: "pbrl-test/items", split: "test" })).rejects.toThrow(
      /eval_dataset: hub dataset pbrl-test\/items \(split "test"\) is not in the Hugging Face cache/,
    );
  });

  it("sends HF_TOKEN as a Bearer token to the hub only, never to the CDN a download redirects to, and never prints it", async () => {
    process.env["HF_TOKEN"] = "good-token";
    expect(await load({ source: "pbrl-test/gated" })).toEqual([{ id: "g0" }]);
    await load({ source: "pbrl-test/items" });
    const hubAuth = new Set(hub.requests.filter((r) => r.server === "hub").map((r) => r.authorization));
    expect(hubAuth).toEqual(new Set(["Bearer good-token"]));
    const cdn = hub.requests.filter((r) => r.server === "cdn");
    expect(cdn.length).toBeGreaterThan(0);
    expect(cdn.every((r) => r.authorization === undefined)).toBe(true);
    process.env["HF_TOKEN"] = "bad-token";
    const err = await failure(load({ source: "pbrl-test/gated", revision: "main" }));
    expect(err.message).toMatch(/access denied \(HTTP 403\).*the token in HF_TOKEN has no access/);
    expect(err.message).not.toContain("bad-token");
    expect(logs.join("\n")).not.toContain("token");
  });

  it("a gated dataset without a token, an unknown dataset, an unknown revision: errors that say what to do", async () => {
    await expect(load({ source: "pbrl-test/gated" })).rejects.toThrow(
      `train_dataset: hub dataset pbrl-test/gated: access denied (HTTP 403) (Access to dataset is restricted); accept its conditions on ${hub.url}/datasets/pbrl-test/gated, then set HF_TOKEN to an access token`,
    );
    await expect(load({ source: "pbrl-test/nope" })).rejects.toThrow(
      `train_dataset: hub dataset pbrl-test/nope: no dataset pbrl-test/nope on ${hub.url} (HTTP 401) (Repository not found); check the id (org/name, as on the dataset's page), or set HF_TOKEN if it is private`,
    );
    await expect(load({ source: "pbrl-test/items", revision: "v9" })).rejects.toThrow(
      'train_dataset: hub dataset pbrl-test/items@v9: the dataset has no revision "v9"',
    );
    await expect(load({ source: "pbrl-test/items", revision: "../../etc" })).rejects.toThrow(
      'train_dataset_revision: "../../etc" is not a branch, tag or commit name',
    );
  });

  it("reads a revision (tag or commit), recording the tag's commit in refs/", async () => {
    expect(await load({ source: "pbrl-test/items", revision: "v1" })).toEqual([{ id: "old" }]);
    expect(readFileSync(path.join(cache, "datasets--pbrl-test--items", "refs", "v1"), "utf8")).toBe(V1);
    // a commit asked for by its hash is no branch or tag: no ref is recorded for it
    expect(await load({ source: "pbrl-test/items", revision: V1 })).toEqual([{ id: "old" }]);
    expect(readdirSync(path.join(cache, "datasets--pbrl-test--items", "refs"))).toEqual(["v1"]);
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await load({ source: "pbrl-test/items", revision: V1 })).toEqual([{ id: "old" }]);
  });

  it("picks a subset from README.md's configs, and lists them when the one asked for is missing", async () => {
    expect(await load({ source: "pbrl-test/subsets", config: "fr" })).toEqual([{ id: "f0", topic: "Le chat" }]);
    expect(await load({ source: "pbrl-test/subsets", config: "en" })).toEqual(await jsonlItems());
    await expect(load({ source: "pbrl-test/subsets" })).rejects.toThrow(
      'train_dataset: hub dataset pbrl-test/subsets has 2 subsets (configs) and none is the default: set train_dataset_config to one of "en", "fr"',
    );
  });

  it("falls back to the Hub's Parquet conversion when the repository's files are in a format pbrl does not read, online and offline", async () => {
    expect(await load({ source: "pbrl-test/text-only" })).toEqual(await jsonlItems());
    expect(hub.requests.some((r) => r.path === "/api/datasets/pbrl-test/text-only/revision/refs%2Fconvert%2Fparquet")).toBe(true);
    expect(readFileSync(path.join(cache, "datasets--pbrl-test--text-only", "refs", "refs", "convert", "parquet"), "utf8")).toBe(commitOf("text parquet"));
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await load({ source: "pbrl-test/text-only" })).toEqual(await jsonlItems());
  });

  it("without data files pbrl reads and without a Parquet conversion: what the repository holds, and the fix", async () => {
    await hub.close();
    hub = await startHub([
      { id: "pbrl-test/txt", revisions: { main: { sha: commitOf("txt"), files: { "train.txt": "a\n", "test.tsv": "b\n" } } } },
      { id: "pbrl-test/empty", revisions: { main: { sha: commitOf("empty"), files: { "README.md": "# nothing\n" } } } },
    ]);
    process.env["HF_ENDPOINT"] = hub.url;
    const tail =
      "and there is no Parquet conversion of it (branch refs/convert/parquet); pbrl reads .jsonl, .json, .csv and .parquet: convert the data to one of these and pass the file";
    expect(await failure(load({ source: "pbrl-test/txt" }))).toMatchObject({
      name: "DatasetError",
      code: "layout",
      message: `train_dataset: hub dataset pbrl-test/txt: its data files are .txt, .tsv, which pbrl does not read, ${tail}`,
    });
    expect((await failure(load({ source: "pbrl-test/empty" }))).message).toBe(`train_dataset: hub dataset pbrl-test/empty: it holds no data files, ${tail}`);
    // the conversion was asked for, on main only
    expect(hub.requests.filter((r) => r.path.includes("refs%2Fconvert%2Fparquet")).map((r) => r.path)).toEqual([
      "/api/datasets/pbrl-test/txt/revision/refs%2Fconvert%2Fparquet",
      "/api/datasets/pbrl-test/empty/revision/refs%2Fconvert%2Fparquet",
    ]);
  });

  it("offline: the message names the revision, the split, the cache and the fix, word for word", async () => {
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await failure(load({ source: "pbrl-test/items", revision: "v1", split: "test" }))).toMatchObject({
      name: "DatasetError",
      code: "unavailable",
      message: `train_dataset: hub dataset pbrl-test/items@v1 (split "test") is not in the Hugging Face cache (${path.join(cache, "datasets--pbrl-test--items")}) and HF_HUB_OFFLINE is set: run once without HF_HUB_OFFLINE on a machine that reaches ${hub.url} (with the same HF_HUB_CACHE), or pass a local file`,
    });
  });

  it("without a log option, progress lines go to stderr, one a line", async () => {
    const written: string[] = [];
    // stderr is captured for this one load (and put back), not forwarded
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await loadDataset({ key: "train_dataset", source: "pbrl-test/gated" }, { hub: { token: "good-token" } });
    } finally {
      spy.mockRestore();
    }
    // "id\ng0\n": 6 bytes
    expect(written).toEqual([`pbrl: train_dataset: hub dataset pbrl-test/gated: downloading train.csv (6 B) from ${hub.url}\n`]);
  });

  it("an empty data file (listed with size 0) is a file, with no items", async () => {
    await hub.close();
    hub = await startHub([{ id: "pbrl-test/none", revisions: { main: { sha: commitOf("none"), files: { "train.jsonl": "" } } } }]);
    process.env["HF_ENDPOINT"] = hub.url;
    expect(await load({ source: "pbrl-test/none" })).toEqual([]);
  });
});

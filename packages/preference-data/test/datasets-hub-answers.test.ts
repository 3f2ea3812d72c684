// Hub answers the loopback hub of @pbrl/test-fixtures never gives (it is a faithful hub): an
// answer that is not JSON, a file list that is no list, a file listed with an id that is no
// hash, a large file, a status the dataset errors have no special words for. A few lines of a
// loopback server in this file speak those answers; and a cache that huggingface_hub filled
// without a trees/ listing is read from its snapshot folder.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commitOf } from "@pbrl/test-fixtures";
import { loadDataset } from "../src/index.js";
import { hubOffline } from "../src/datasets/hub-http.js";

const ENV = ["HF_ENDPOINT", "HF_HUB_CACHE", "HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"];
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
const SHA = commitOf("answers");
let server: Server | undefined;
let url: string;
let cache: string;
let logs: string[];

/** A loopback hub answering each path (after /api/datasets/org/name/ or /datasets/org/name/) as `answers` says. */
type Answer = { status?: number; body: string; headers?: Record<string, string> };

async function serve(answers: Record<string, Answer>): Promise<void> {
  server = createServer((req, res) => {
    const p = (req.url ?? "").replace(/^\/(api\/)?datasets\/org\/name\//, "").replace(/\?.*$/, "");
    const a = answers[p] ?? { status: 404, body: JSON.stringify({ error: "Entry not found" }), headers: { "x-error-code": "EntryNotFound" } };
    res.writeHead(a.status ?? 200, { "content-type": "application/json", ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env["HF_ENDPOINT"] = url;
}
const load = (source = "org/name") => loadDataset({ key: "train_dataset", source }, { log: (l) => logs.push(l), hub: { retry: { retries: 0 } } });
const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e as Error,
  );
const revision: Record<string, Answer> = { "revision/main": { body: JSON.stringify({ sha: SHA }) } };

beforeEach(() => {
  for (const k of ENV) delete process.env[k];
  cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
  process.env["HF_HUB_CACHE"] = cache;
  logs = [];
});

afterEach(async () => {
  if (server !== undefined) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  }
  server = undefined;
  for (const k of ENV)
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
});

describe("hub answers a faithful hub never gives", () => {
  it("an answer about the revision that is not JSON", async () => {
    await serve({ "revision/main": { body: "<html>hello</html>" } });
    let why = "";
    try {
      JSON.parse("<html>hello</html>");
    } catch (e) {
      why = (e as Error).message;
    }
    expect(await failure(load())).toMatchObject({
      name: "DatasetError",
      code: "hub",
      message: `train_dataset: hub dataset org/name: the answer about revision main from ${url} is not JSON (${why}); is HF_ENDPOINT a Hugging Face hub?`,
    });
  });

  it("a file list that is not a list", async () => {
    await serve({ ...revision, [`tree/${SHA}`]: { body: JSON.stringify({ files: [] }) } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: the file list of org/name at ${SHA} from ${url} is not a JSON list; is HF_ENDPOINT a Hugging Face hub?`,
    );
  });

  it("a file listed with an id that is not a hash", async () => {
    const tree = [
      { type: "directory", path: "data", oid: commitOf("d"), size: 0 },
      { type: "file", path: "train.jsonl", oid: "not-a-hash", size: 20 },
    ];
    await serve({ ...revision, [`tree/${SHA}`]: { body: JSON.stringify(tree) } });
    expect((await failure(load())).message).toBe(`train_dataset: hub dataset org/name: ${url} listed train.jsonl with an unusable id "not-a-hash"`);
  });

  it("a download that fails in the cache, not on the hub, keeps its own error", async () => {
    const tree = [{ type: "file", path: "train.jsonl", oid: commitOf("t"), size: 20 }];
    await serve({ ...revision, [`tree/${SHA}`]: { body: JSON.stringify(tree) } });
    // blobs/ is a file: the download cannot write its blob.
    mkdirSync(path.join(cache, "datasets--org--name"), { recursive: true });
    writeFileSync(path.join(cache, "datasets--org--name", "blobs"), "not a folder");
    const err = await failure(load());
    // A file-system error is no hub answer: it reaches the caller as Node gave it, code and all.
    expect(err).not.toHaveProperty("name", "DatasetError");
    expect(err).toMatchObject({ code: "EEXIST", message: `EEXIST: file already exists, mkdir '${path.join(cache, "datasets--org--name", "blobs")}'` });
  });

  it("says the size of the file it downloads in B, kB, MB or GB", async () => {
    const answers: Record<string, { body: string }> = { ...revision };
    await serve(answers);
    const said: string[] = [];
    for (const size of [999, 1000, 1_500, 999_499, 1_000_000, 2_540_000, 1_000_000_000, 1_240_000_000]) {
      // a fresh cache each time, so the file list is asked for again; the download itself fails (the hub has no such file)
      process.env["HF_HUB_CACHE"] = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
      answers[`tree/${SHA}`] = { body: JSON.stringify([{ type: "file", path: "train.jsonl", oid: commitOf("t"), size }]) };
      logs = [];
      await failure(load());
      said.push(...logs);
    }
    const line = (size: string) => `pbrl: train_dataset: hub dataset org/name: downloading train.jsonl (${size}) from ${url}`;
    expect(said).toEqual(["999 B", "1 kB", "2 kB", "999 kB", "1.0 MB", "2.5 MB", "1.0 GB", "1.2 GB"].map(line));
  });

  it("a status the dataset errors have no words for: the URL and the status, with the hub's message", async () => {
    await serve({ "revision/main": { status: 418, body: JSON.stringify({ error: "I'm a teapot" }) } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: ${url}/api/datasets/org/name/revision/main answered HTTP 418 (I'm a teapot)`,
    );
  });

  it("404 without RevisionNotFound is an unknown dataset; with a token the fix names the token's account", async () => {
    await serve({ "revision/main": { status: 404, body: "not json" } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: no dataset org/name on ${url} (HTTP 404); check the id (org/name, as on the dataset's page), or set HF_TOKEN if it is private`,
    );
    process.env["HF_TOKEN"] = "a-token";
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: no dataset org/name on ${url} (HTTP 404); check the id (org/name), and that HF_TOKEN's account can read it`,
    );
  });
});

describe("hub errors, word for word", () => {
  it("shows the first 200 characters of the hub's error message, and none when the body is not an object with an error string", async () => {
    const long = "x".repeat(199) + "yz";
    const answers: Record<string, { status: number; body: string }> = { "revision/main": { status: 418, body: JSON.stringify({ error: long }) } };
    await serve(answers);
    const at = `${url}/api/datasets/org/name/revision/main`;
    expect((await failure(load())).message).toBe(`train_dataset: hub dataset org/name: ${at} answered HTTP 418 (${"x".repeat(199)}y)`);
    for (const body of ["null", JSON.stringify({ error: 5 }), JSON.stringify({ error: ["a", "b"] }), JSON.stringify({ message: "m" })]) {
      answers["revision/main"] = { status: 418, body };
      expect((await failure(load())).message).toBe(`train_dataset: hub dataset org/name: ${at} answered HTTP 418`);
    }
  });

  it("403 without an error code is access denied; RevisionNotFound names the revision and where to look", async () => {
    await serve({
      "revision/main": { status: 403, body: JSON.stringify({ error: "Forbidden" }) },
      "revision/v2": { status: 404, body: JSON.stringify({ error: "Invalid rev id: v2" }), headers: { "x-error-code": "RevisionNotFound" } },
    });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: access denied (HTTP 403) (Forbidden); accept its conditions on ${url}/datasets/org/name, then set HF_TOKEN to an access token`,
    );
    expect(
      (await failure(loadDataset({ key: "eval_dataset", source: "org/name", revision: "v2" }, { log: () => undefined, hub: { retry: { retries: 0 } } })))
        .message,
    ).toBe(
      `eval_dataset: hub dataset org/name@v2: the dataset has no revision "v2" (Invalid rev id: v2); give a branch, tag or commit that exists on ${url}/datasets/org/name`,
    );
  });

  it("HF_DATASETS_OFFLINE set to 1, true, yes or on (any case, spaces around) is offline too; other values are not", () => {
    for (const v of ["1", "true", " YES ", "On"]) {
      process.env["HF_DATASETS_OFFLINE"] = v;
      expect(hubOffline(), v).toBe(true);
    }
    for (const v of ["0", "", "10", "x1", "yes please", "off"]) {
      process.env["HF_DATASETS_OFFLINE"] = v;
      expect(hubOffline(), v).toBe(false);
    }
    delete process.env["HF_DATASETS_OFFLINE"];
    expect(hubOffline()).toBe(false);
  });
});

describe("odd file lists and answers", () => {
  const noConversion = { "revision/refs%2Fconvert%2Fparquet": { status: 404, body: "{}", headers: { "x-error-code": "RevisionNotFound" } } };
  const listing = (tree: unknown[]) => ({ ...revision, ...noConversion, [`tree/${SHA}`]: { body: JSON.stringify(tree) } });

  it("skips entries that are no file with a path, an id and a size (a whole non-negative number)", async () => {
    const ok = { type: "file", path: "train.jsonl", oid: commitOf("t") };
    await serve(
      listing([
        null,
        5,
        "train.jsonl",
        { ...ok, type: "directory", size: 1 },
        { ...ok, path: 5, size: 1 },
        { ...ok, oid: 5, size: 1 },
        { ...ok, size: -1 },
        { ...ok, size: 1.5 },
        { ...ok, size: "5" },
      ]),
    );
    expect(await failure(load())).toMatchObject({
      code: "layout",
      message:
        "train_dataset: hub dataset org/name: it holds no data files, and there is no Parquet conversion of it (branch refs/convert/parquet); pbrl reads .jsonl, .json, .csv and .parquet: convert the data to one of these and pass the file",
    });
  });

  it("a missing conversion branch is an error unless the hub says RevisionNotFound with a 404", async () => {
    const txt = [{ type: "file", path: "train.txt", oid: commitOf("t"), size: 2 }];
    await serve({ ...revision, [`tree/${SHA}`]: { body: JSON.stringify(txt) }, "revision/refs%2Fconvert%2Fparquet": { status: 404, body: "{}" } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: no dataset org/name on ${url} (HTTP 404); check the id (org/name, as on the dataset's page), or set HF_TOKEN if it is private`,
    );
    server!.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
    process.env["HF_HUB_CACHE"] = cache;
    await serve({
      ...revision,
      [`tree/${SHA}`]: { body: JSON.stringify(txt) },
      "revision/refs%2Fconvert%2Fparquet": { status: 400, body: "{}", headers: { "x-error-code": "RevisionNotFound" } },
    });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: the dataset has no revision "refs/convert/parquet"; give a branch, tag or commit that exists on ${url}/datasets/org/name`,
    );
  });

  it("an answer about the revision without a commit: null, or a sha that is no string", async () => {
    for (const [body, sha] of [
      ["null", "undefined"],
      [JSON.stringify({ sha: 5 }), "5"],
    ] as const) {
      await serve({ "revision/main": { body } });
      expect(await failure(load())).toMatchObject({
        code: "hub",
        message: `train_dataset: hub dataset org/name: ${url} gave no commit for revision main (sha ${sha})`,
      });
      server!.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
    }
  });

  it("a file list answered with an error status", async () => {
    await serve({ ...revision, [`tree/${SHA}`]: { status: 418, body: JSON.stringify({ error: "no list" }) } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: ${url}/api/datasets/org/name/tree/${SHA}?recursive=true&expand=false answered HTTP 418 (no list)`,
    );
  });

  it("follows a Link header written without a space, saves the listing sorted with its xet hashes, and uses the LFS id and size only when both are usable", async () => {
    const t = { type: "file", oid: commitOf("t") };
    const answers: Record<string, { body: string; headers?: Record<string, string> }> = {
      ...revision,
      ...noConversion,
      [`tree/${SHA}`]: {
        body: JSON.stringify([
          { ...t, path: "train-b.jsonl", size: 20, xetHash: "beef" },
          { ...t, path: "train-a.jsonl", size: 30, xetHash: 5, lfs: { oid: 5, size: 2000 } },
        ]),
        headers: { link: `<${"/api/datasets/org/name/tree/" + SHA}?cursor=2>;rel="next"` },
      },
    };
    await serve(answers);
    // the second page (the same path to this server) would loop: it is told apart by its cursor
    let pages = 0;
    server!.removeAllListeners("request");
    server!.on("request", (req, res) => {
      const u = req.url ?? "";
      if (u.includes("/revision/main")) return res.end(JSON.stringify({ sha: SHA }));
      if (u.includes("/revision/")) {
        res.writeHead(404, { "x-error-code": "RevisionNotFound" });
        return res.end("{}");
      }
      if (u.includes("/tree/")) {
        pages++;
        if (u.includes("cursor=2")) return res.end(JSON.stringify([{ ...t, path: "train-c.jsonl", size: 10 }]));
        res.writeHead(200, answers[`tree/${SHA}`]!.headers);
        return res.end(answers[`tree/${SHA}`]!.body);
      }
      res.writeHead(404);
      res.end("{}");
    });
    const err = await failure(load());
    expect(err).toMatchObject({ code: "hub" });
    expect(err.cause).toBeInstanceOf(Error);
    expect(pages).toBe(2);
    // train-a first; its LFS entry has no usable id, so its git id and size are used
    expect(logs).toEqual([`pbrl: train_dataset: hub dataset org/name: downloading train-a.jsonl (30 B) from ${url}`]);
    const saved = JSON.parse(readFileSync(path.join(cache, "datasets--org--name", "trees", `${SHA}.json`), "utf8"));
    expect(Object.keys(saved.files)).toEqual(["train-a.jsonl", "train-b.jsonl", "train-c.jsonl"]);
    expect(saved.files["train-b.jsonl"]).toEqual({ size: 20, blob_id: commitOf("t"), xet_hash: "beef" });
    expect(saved.files["train-a.jsonl"]).toEqual({ size: 30, blob_id: commitOf("t") });
  });

  it("a tag without data files pbrl reads has no conversion to fall back to; an empty conversion is none either", async () => {
    const txt = JSON.stringify([{ type: "file", path: "train.txt", oid: commitOf("t"), size: 2 }]);
    const tail =
      "and there is no Parquet conversion of it (branch refs/convert/parquet); pbrl reads .jsonl, .json, .csv and .parquet: convert the data to one of these and pass the file";
    await serve({
      "revision/v1": { body: JSON.stringify({ sha: SHA }) },
      ...revision,
      [`tree/${SHA}`]: { body: txt },
      "revision/refs%2Fconvert%2Fparquet": { body: JSON.stringify({ sha: commitOf("conv") }) },
      [`tree/${commitOf("conv")}`]: { body: JSON.stringify([{ type: "file", path: ".gitattributes", oid: commitOf("g"), size: 1 }]) },
    });
    expect((await failure(loadDataset({ key: "train_dataset", source: "org/name", revision: "v1" }, { log: () => undefined }))).message).toBe(
      `train_dataset: hub dataset org/name@v1: its data files are .txt, which pbrl does not read, ${tail}`,
    );
    expect((await failure(load())).message).toBe(`train_dataset: hub dataset org/name: its data files are .txt, which pbrl does not read, ${tail}`);
  });

  it("stops a file list whose pages together pass 64 MiB, though each is smaller", async () => {
    const pad = " ".repeat(40 * 2 ** 20);
    await serve(revision);
    let pages = 0;
    server!.removeAllListeners("request");
    server!.on("request", (req, res) => {
      const u = req.url ?? "";
      if (u.includes("/revision/")) return res.end(JSON.stringify({ sha: SHA }));
      pages++;
      res.writeHead(200, { link: `</api/datasets/org/name/tree/${SHA}?cursor=${pages}>; rel="next"` });
      res.end(`${pad}[]`);
    });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: the file list of org/name at ${SHA} from ${url} is larger than 64 MiB, more than pbrl reads of one hub answer; check HF_ENDPOINT, or, for a dataset with this many files, download the files you need (hf download … --repo-type dataset --include …) and pass their folder`,
    );
    expect(pages).toBe(2);
  });

  it("names an id that is not a 40 to 64 digit hex hash, whatever surrounds the digits", async () => {
    const hex = "a".repeat(40);
    for (const oid of ["not-a-hash", `g${hex}`, `${hex}g`, "a".repeat(39), "a".repeat(65)]) {
      cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
      process.env["HF_HUB_CACHE"] = cache;
      await serve(listing([{ type: "file", path: "train.jsonl", oid, size: 20 }]));
      expect(await failure(load())).toMatchObject({
        code: "hub",
        message: `train_dataset: hub dataset org/name: ${url} listed train.jsonl with an unusable id "${oid}"`,
      });
      server!.closeAllConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
    }
  });
});

describe("a cache without trees/{commit}.json (huggingface_hub before 1.x)", () => {
  it("is read offline from its snapshot folder, sub-folders included", async () => {
    const repo = path.join(cache, "datasets--org--name");
    mkdirSync(path.join(repo, "refs"), { recursive: true });
    writeFileSync(path.join(repo, "refs", "main"), `${SHA}\n`);
    const snap = path.join(repo, "snapshots", SHA);
    mkdirSync(path.join(snap, "data"), { recursive: true });
    writeFileSync(path.join(snap, "data", "train-00000-of-00001.jsonl"), '{"q": "cached"}\n');
    writeFileSync(path.join(snap, "README.md"), "# cached\n");
    process.env["HF_HUB_OFFLINE"] = "1";
    expect(await load()).toEqual([{ q: "cached" }]);
  });

  const cached = (files: Record<string, string>, tree?: string, ref = `${SHA}\n`): string => {
    const repo = path.join(cache, "datasets--org--name");
    mkdirSync(path.join(repo, "refs"), { recursive: true });
    writeFileSync(path.join(repo, "refs", "main"), ref);
    for (const [f, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(repo, "snapshots", SHA, f)), { recursive: true });
      writeFileSync(path.join(repo, "snapshots", SHA, f), text);
    }
    if (tree !== undefined) {
      mkdirSync(path.join(repo, "trees"), { recursive: true });
      writeFileSync(path.join(repo, "trees", `${SHA}.json`), tree);
    }
    process.env["HF_HUB_OFFLINE"] = "1";
    return repo;
  };
  const entry = { size: 1, blob_id: commitOf("x") };

  it("a trees/ listing of another format, or without files, is passed over for the snapshot folder", async () => {
    for (const tree of [
      JSON.stringify({ format_version: 2, files: { "other.jsonl": entry } }),
      JSON.stringify({ format_version: 1 }),
      JSON.stringify({ format_version: 1, files: null }),
      JSON.stringify({ format_version: 1, files: "other.jsonl" }),
      "not json",
    ]) {
      cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
      process.env["HF_HUB_CACHE"] = cache;
      cached({ "train.jsonl": '{"q": "snapshot"}\n' }, tree);
      expect(await load(), tree).toEqual([{ q: "snapshot" }]);
    }
  });

  it("a trees/ listing that names a file the snapshot lacks makes the cached copy partial: not in the cache", async () => {
    cached({ "train-a.jsonl": '{"q": 1}\n' }, JSON.stringify({ format_version: 1, files: { "train-a.jsonl": entry, "train-b.jsonl": entry } }));
    expect((await failure(load())).message).toMatch(/^train_dataset: hub dataset org\/name \(split "train"\) is not in the Hugging Face cache/);
    // the same listing, read: it is the file list
    cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
    process.env["HF_HUB_CACHE"] = cache;
    cached({ "train-a.jsonl": '{"q": 1}\n', "train-c.jsonl": '{"q": 3}\n' }, JSON.stringify({ format_version: 1, files: { "train-a.jsonl": entry } }));
    expect(await load()).toEqual([{ q: 1 }]);
  });

  it("a ref that holds no commit is no cached copy; a commit asked for by its hash needs no ref", async () => {
    cached({ "train.jsonl": '{"q": 1}\n' }, undefined, "main\n");
    expect((await failure(load())).message).toMatch(/is not in the Hugging Face cache/);
    expect(await loadDataset({ key: "train_dataset", source: "org/name", revision: SHA }, { log: () => undefined })).toEqual([{ q: 1 }]);
  });

  it("a README.md listed but not in the snapshot, or a ref to a snapshot that is gone, is no cached copy; a README.md that is not UTF-8 is named", async () => {
    cached({ "train.jsonl": '{"q": 1}\n' }, JSON.stringify({ format_version: 1, files: { "README.md": entry, "train.jsonl": entry } }));
    expect((await failure(load())).message).toMatch(/^train_dataset: hub dataset org\/name \(split "train"\) is not in the Hugging Face cache/);
    cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
    process.env["HF_HUB_CACHE"] = cache;
    cached({}); // refs/main names a commit whose snapshot folder is not there
    expect(await failure(load())).toMatchObject({ code: "unavailable" });
    cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-answers-"));
    process.env["HF_HUB_CACHE"] = cache;
    const card = path.join(cached({ "README.md": "\xff", "train.jsonl": '{"q": 1}\n' }), "snapshots", SHA, "README.md");
    writeFileSync(card, Buffer.from([0x23, 0xff]));
    expect(await failure(load())).toMatchObject({
      code: "invalid_file",
      message: `train_dataset: hub dataset org/name: README.md ${card} is not valid UTF-8 text: invalid UTF-8 at byte offset 1 (line 1; bytes 0xFF); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)`,
    });
  });

  it("a listing that names a path that is not a plain repository path is not taken from the cache either", async () => {
    cached({ "train.jsonl": '{"q": 1}\n' }, JSON.stringify({ format_version: 1, files: { "/abs/train-1.jsonl": entry, "train.jsonl": entry } }));
    expect(await load()).toEqual([{ q: 1 }]);
  });
});

describe("hub errors: the code, gated repositories, and a token without access", () => {
  it("every hub error has the hub code", async () => {
    await serve({
      "revision/main": { status: 418, body: "" },
      "revision/v2": { status: 404, body: "", headers: { "x-error-code": "RevisionNotFound" } },
      "revision/v3": { status: 403, body: "" },
      "revision/v4": { status: 401, body: "" },
    });
    for (const rev of ["main", "v2", "v3", "v4"])
      expect(await failure(loadDataset({ key: "train_dataset", source: "org/name", revision: rev }, { hub: { retry: { retries: 0 } } })), rev).toMatchObject({
        name: "DatasetError",
        code: "hub",
      });
  });

  it("GatedRepo is access denied whatever the status; with a token the fix names that account", async () => {
    await serve({ "revision/main": { status: 401, body: "", headers: { "x-error-code": "GatedRepo" } } });
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: access denied (HTTP 401); accept its conditions on ${url}/datasets/org/name, then set HF_TOKEN to an access token`,
    );
    process.env["HF_TOKEN"] = "a-token";
    expect((await failure(load())).message).toBe(
      `train_dataset: hub dataset org/name: access denied (HTTP 401); the token in HF_TOKEN has no access: accept the dataset's conditions on ${url}/datasets/org/name with that account, or use a token with read access`,
    );
  });
});

describe("hub answers, the code and the commit", () => {
  it("a file list that is not a list has the hub code; a sha that is a list holding a commit is no commit", async () => {
    await serve({ ...revision, [`tree/${SHA}`]: { body: "{}" } });
    expect(await failure(load())).toMatchObject({ name: "DatasetError", code: "hub" });
    server!.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    await serve({ "revision/main": { body: JSON.stringify({ sha: [SHA] }) } });
    expect(await failure(load())).toMatchObject({
      code: "hub",
      message: `train_dataset: hub dataset org/name: ${url} gave no commit for revision main (sha ["${SHA}"])`,
    });
  });
});

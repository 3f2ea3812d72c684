// A hostile hub cannot make a model download write outside the Hugging Face cache: the hub double
// (a real server on 127.0.0.1) gives a commit id that is a path, an index naming dotfiles and
// paths, ETags that are paths or too long, bodies longer than listed (plain and as gzip bombs),
// sizes left out; the cache holds links that lead out of it. After every case each file outside
// the cache is byte for byte what it was (sha256), and every link pbrl left in the cache stays in it.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { downloadModel, hubDownloadTimeoutMs, resolveModelDir } from "../src/index.js";
import { addRepo, fileDigests, linksLeaving, makeFaithful, startHubDouble, type HubDouble } from "@pbrl/test-fixtures";
import { FIXTURES } from "./reference.js";

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const once = { retry: { retries: 0 } };
const METADATA_LIMIT = 64 * 2 ** 20;

let hub: HubDouble;
let world: string;
let cache: string;
let before: Record<string, string>;
/** Links a test put in the cache itself (leading out on purpose). */
let planted: string[];
const plant = (target: string, link: string) => {
  symlinkSync(target, link);
  planted.push(link);
};
const saved = { ...process.env };

/** A small model repository: the tiny Llama fixture with 200 kB of deterministic "weights". */
function repoFiles(): Record<string, Buffer> {
  const dir = path.join(FIXTURES, "tiny-llama");
  const files: Record<string, Buffer> = Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f))]));
  files["model.safetensors"] = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 2654435761) >>> 24));
  return files;
}

/** A repository whose weights are sharded, the index naming `shards` (each served with `content`). */
function shardedFiles(shards: string[], content = Buffer.from("echo pwned\n")): Record<string, Buffer> {
  const files = repoFiles();
  delete files["model.safetensors"];
  files["model.safetensors.index.json"] = Buffer.from(JSON.stringify({ weight_map: Object.fromEntries(shards.map((s, i) => [`w${i}`, s])) }));
  for (const s of shards) files[s] = content;
  return files;
}

beforeAll(async () => {
  hub = await startHubDouble();
});
afterAll(() => hub.close());

beforeEach(() => {
  // world/cache is HF_HUB_CACHE; world/victim, world/home and world/elsewhere are what a hostile hub would like to reach.
  world = mkdtempSync(path.join(tmpdir(), "pbrl-hostile-"));
  cache = path.join(world, "cache");
  mkdirSync(cache);
  for (const [file, text] of [
    ["victim/.bashrc", "export PATH=/usr/bin\n"],
    ["victim/config.json", '{"mine": true}\n'],
    ["home/.profile", "umask 022\n"],
    ["elsewhere/keep.txt", "kept\n"],
  ] as const) {
    mkdirSync(path.dirname(path.join(world, file)), { recursive: true });
    writeFileSync(path.join(world, file), text);
  }
  before = fileDigests(world, [cache]);
  planted = [];
  process.env["HF_HUB_CACHE"] = cache;
  process.env["HF_ENDPOINT"] = hub.hubUrl;
  delete process.env["HF_TOKEN"];
  delete process.env["HF_HUB_OFFLINE"];
  delete process.env["HF_HUB_DOWNLOAD_TIMEOUT"];
});

afterEach(() => {
  makeFaithful(hub);
  hub.requests.length = 0;
  process.env = { ...saved };
  // The point of every case: nothing outside the cache changed, and the cache has no link leading out.
  expect(fileDigests(world, [cache])).toEqual(before);
  expect(linksLeaving(cache).filter((l) => !planted.some((p) => l.startsWith(`${p} -> `)))).toEqual([]);
});

const incompleteFiles = (repoDir: string) => {
  const blobs = path.join(repoDir, "blobs");
  return existsSync(blobs) ? readdirSync(blobs).filter((f) => f.endsWith(".incomplete")) : [];
};

describe("a hostile hub and model downloads", () => {
  it("refuses an X-Repo-Commit that is not a commit id (../../../victim with an index naming .bashrc), naming the server and the header", async () => {
    hub.hostile.commit = "../../../victim";
    addRepo(hub, "acme/victim", shardedFiles([".bashrc"]));
    await expect(downloadModel("acme/victim", once)).rejects.toThrow(
      new RegExp(
        `^acme/victim: ${hub.hubUrl.replace(/[.]/g, "\\.")} sent X-Repo-Commit "\\.\\./\\.\\./\\.\\./victim" for config\\.json, which is not a commit id \\(40 hex digits\\); ` +
          "pbrl names cache folders by it, so it downloads nothing from this server\\. Check HF_ENDPOINT",
      ),
    );
    expect(existsSync(path.join(cache, "models--acme--victim", "refs"))).toBe(false);
  });

  it("refuses an empty X-Repo-Commit (which would have named the snapshots folder itself)", async () => {
    addRepo(hub, "acme/empty", repoFiles());
    hub.hostile.commit = "";
    await expect(downloadModel("acme/empty", once)).rejects.toThrow(/sent X-Repo-Commit "" for config\.json, which is not a commit id/);
  });

  it("refuses shard names that are not paths inside the repository: absolute, backslashes, empty or dot parts, NUL", async () => {
    for (const [i, shard] of [
      "/tmp/evil.safetensors",
      "..\\evil.safetensors",
      "a//b.safetensors",
      "./model.safetensors",
      "a/../../b",
      "x\0.safetensors",
    ].entries()) {
      addRepo(hub, `acme/shard${i}`, shardedFiles([shard]));
      await expect(downloadModel(`acme/shard${i}`, once)).rejects.toThrow(
        `acme/shard${i}: model.safetensors.index.json names ${JSON.stringify(shard)}, which is not a file path inside the repository`,
      );
    }
  });

  it("refuses a revision that is not a branch, tag or commit name before asking the hub anything", async () => {
    addRepo(hub, "acme/rev", repoFiles());
    for (const revision of ["../../../victim/.bashrc", "/etc/passwd", "main/../..", "a\\b"]) {
      await expect(downloadModel("acme/rev", { ...once, revision })).rejects.toThrow(
        `revision ${JSON.stringify(revision)} is not a branch, tag or commit name`,
      );
      await expect(resolveModelDir("acme/rev", revision, once)).rejects.toThrow(`revision ${JSON.stringify(revision)} is not a branch, tag or commit name`);
    }
    expect(hub.requests).toEqual([]);
  });

  it("names blobs by their sha256 when the ETag is a path or too long to be a file name", async () => {
    const files = repoFiles();
    const repo = addRepo(hub, "acme/etag", files);
    hub.hostile.etag.set("model.safetensors", "../../../victim/.bashrc");
    hub.hostile.etag.set("config.json", "e".repeat(300));
    const dir = await downloadModel("acme/etag", once);
    expect(dir).toBe(path.join(cache, "models--acme--etag", "snapshots", repo.commit));
    for (const [name, bytes] of Object.entries(files)) expect(readFileSync(path.join(dir, name)).equals(bytes)).toBe(true);
    const blobs = readdirSync(path.join(cache, "models--acme--etag", "blobs"));
    expect(blobs).toContain(sha256(files["model.safetensors"]!));
    expect(blobs).toContain(sha256(files["config.json"]!));
  });

  it("stops reading a body longer than the size the hub lists, keeping none of it", async () => {
    addRepo(hub, "acme/long", repoFiles());
    hub.hostile.overlong.set("model.safetensors", 5_000_000);
    await expect(downloadModel("acme/long", once)).rejects.toThrow(
      /^acme\/long: model\.safetensors from http:\/\/127\.0\.0\.1:\d+ is longer than the 200000 bytes the hub lists; pbrl stopped reading it and kept none of it\./,
    );
    expect(incompleteFiles(path.join(cache, "models--acme--long"))).toEqual([]);
  });

  it("does not inflate a gzip body past the listed size (a gzip bomb), and accepts one that inflates to exactly the file", async () => {
    const files = repoFiles();
    addRepo(hub, "acme/bomb", files);
    hub.hostile.gzip.add("model.safetensors");
    hub.hostile.overlong.set("model.safetensors", 64_000_000); // about 60 kB compressed
    await expect(downloadModel("acme/bomb", once)).rejects.toThrow(/^acme\/bomb: model\.safetensors from .* is longer than the 200000 bytes the hub lists/);
    expect(incompleteFiles(path.join(cache, "models--acme--bomb"))).toEqual([]);
    hub.hostile.overlong.clear();
    const dir = await downloadModel("acme/bomb", once);
    expect(readFileSync(path.join(dir, "model.safetensors")).equals(files["model.safetensors"]!)).toBe(true);
  });

  it("caps a file whose size the hub does not list (config and other metadata: 64 MiB)", async () => {
    const files = repoFiles();
    addRepo(hub, "acme/unlisted", files);
    hub.hostile.unlisted.add("tokenizer.json");
    const dir = await downloadModel("acme/unlisted", once);
    expect(readFileSync(path.join(dir, "tokenizer.json")).equals(files["tokenizer.json"]!)).toBe(true);
    addRepo(hub, "acme/endless", files);
    hub.hostile.overlong.set("tokenizer.json", METADATA_LIMIT + 1_000_000);
    await expect(downloadModel("acme/endless", once)).rejects.toThrow(
      /^acme\/endless: tokenizer\.json from .* is longer than 67108864 bytes, the most pbrl reads of a file whose size the hub does not list; pbrl stopped reading it and kept none of it/,
    );
    expect(incompleteFiles(path.join(cache, "models--acme--endless"))).toEqual([]);
  });

  it("refuses to write through a link in the cache that leads out of it (a folder, or a dangling partial file)", async () => {
    const files = repoFiles();
    addRepo(hub, "acme/linked", files);
    mkdirSync(path.join(cache, "models--acme--linked"));
    plant(path.join(world, "elsewhere"), path.join(cache, "models--acme--linked", "blobs"));
    const link = path.join(cache, "models--acme--linked", "blobs");
    await expect(downloadModel("acme/linked", once)).rejects.toThrow(
      new RegExp(
        `^acme/linked: refusing to write there: ${esc(link)}/\\S+ leads out of the Hugging Face cache ${esc(cache)} through the symbolic link ${esc(link)} ` +
          `\\(to ${esc(path.join(world, "elsewhere"))}/\\S+\\); pbrl writes downloads only inside the cache: remove the link, or set HF_HUB_CACHE`,
      ),
    );

    // A partial file that is a link to a file not there yet: appending to it would create that file.
    const repo = addRepo(hub, "acme/partial", files);
    const blobs = path.join(cache, "models--acme--partial", "blobs");
    mkdirSync(blobs, { recursive: true });
    plant(path.join(world, "victim", "planted"), path.join(blobs, `${sha256(files["model.safetensors"]!)}.incomplete`));
    await expect(downloadModel("acme/partial", once)).rejects.toThrow(/refusing to write there: .*\.incomplete leads out of the Hugging Face cache/);
    expect(existsSync(path.join(world, "victim", "planted"))).toBe(false);
    expect(repo.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it("writes every path of a faithful download inside the cache (blobs, snapshot links, refs), sharded weights included", async () => {
    const files = shardedFiles(["model-00001-of-00002.safetensors", "sub/model-00002-of-00002.safetensors"], Buffer.alloc(150_000, 7));
    const repo = addRepo(hub, "acme/faithful", files);
    const dir = await downloadModel("acme/faithful", once);
    expect(dir).toBe(path.join(cache, "models--acme--faithful", "snapshots", repo.commit));
    for (const [name, bytes] of Object.entries(files)) expect(readFileSync(path.join(dir, name)).equals(bytes)).toBe(true);
    expect(readFileSync(path.join(cache, "models--acme--faithful", "refs", "main"), "utf8")).toBe(repo.commit);
    expect(Object.keys(fileDigests(cache)).every((p) => p.startsWith("models--acme--faithful"))).toBe(true);
  });

  it("HF_HUB_DOWNLOAD_TIMEOUT beyond what a timer can hold (3000000 s) waits as long as it can, instead of timing out at once", async () => {
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "3000000";
    expect(hubDownloadTimeoutMs()).toBe(2 ** 31 - 1);
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "0.5";
    expect(hubDownloadTimeoutMs()).toBe(500);
    process.env["HF_HUB_DOWNLOAD_TIMEOUT"] = "3000000";
    const files = repoFiles();
    addRepo(hub, "acme/patient", files);
    const dir = await downloadModel("acme/patient", once);
    expect(statSync(path.join(dir, "model.safetensors")).size).toBe(files["model.safetensors"]!.length);
  });
});

// Hub ids resolve through a real HTTP server on loopback that speaks the hub's resolve/ URLs.
import { existsSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadPretrained, resolveModelDir } from "../src/index.js";
import { FIXTURES } from "./reference.js";

const REPO = path.join(FIXTURES, "tiny-qwen2-sharded");
// A plain file server that names the commit, as the hub does, in X-Repo-Commit (40 hex digits).
const COMMIT = "0123abcd".repeat(5);
let server: Server;
let requests: { url: string; auth: string | undefined }[] = [];
const saved = { ...process.env };

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push({ url: req.url ?? "", auth: req.headers.authorization });
    const m = new RegExp(`^/acme/tiny/resolve/(?:main|${COMMIT})/(.+)$`).exec(req.url ?? "");
    const file = m ? path.join(REPO, decodeURIComponent(m[1]!)) : undefined;
    if (file === undefined || !existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "x-repo-commit": COMMIT }).end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
afterEach(() => {
  process.env = { ...saved };
  requests = [];
});

function useCache(): string {
  const cache = mkdtempSync(path.join(tmpdir(), "pbrl-hub-"));
  process.env["HF_HUB_CACHE"] = cache;
  process.env["HF_ENDPOINT"] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  delete process.env["HF_HUB_OFFLINE"];
  return cache;
}

describe("hub ids", () => {
  it("downloads into the Hugging Face cache layout once, then loads from the cache", async () => {
    const cache = useCache();
    process.env["HF_TOKEN"] = "hf_secret";
    const dir = await resolveModelDir("acme/tiny");
    expect(dir).toBe(path.join(cache, "models--acme--tiny", "snapshots", COMMIT));
    expect(readFileSync(path.join(cache, "models--acme--tiny", "refs", "main"), "utf8")).toBe(COMMIT);
    expect(readdirSync(dir)).toContain("model-00009-of-00009.safetensors");
    expect(requests.every((r) => r.auth === "Bearer hf_secret")).toBe(true);
    const n = requests.length;
    const p = await loadPretrained("acme/tiny");
    expect(requests.length).toBe(n); // served from the cache
    expect(p.model.numParameters()).toBe(123456);
    p.model.dispose();
  });

  it("says clearly when the hub cannot be reached or the model is not cached offline", async () => {
    useCache();
    process.env["HF_ENDPOINT"] = "http://127.0.0.1:9"; // nothing listens on the discard port
    await expect(resolveModelDir("acme/tiny")).rejects.toThrow(/cannot download acme\/tiny from http:\/\/127\.0\.0\.1:9 .*offline.*local checkpoint folder/);
    process.env["HF_HUB_OFFLINE"] = "1";
    await expect(resolveModelDir("acme/tiny")).rejects.toThrow(/not in the Hugging Face cache .* HF_HUB_OFFLINE is set/);
  });

  it("reports a repository without weights or config", async () => {
    useCache();
    await expect(resolveModelDir("acme/missing")).rejects.toThrow(/the hub has no config\.json/);
    await expect(resolveModelDir("not a hub id")).rejects.toThrow(/neither an existing folder nor a hub id/);
  });
});

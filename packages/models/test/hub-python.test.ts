// The cache is shared with Python's huggingface_hub both ways: what pbrl downloads, Python finds
// offline (snapshot_download/hf_hub_download with local_files_only=True), and what Python
// downloads, pbrl finds offline. Runs with $PBRL_FIXTURE_PYTHON (CI sets it), $PBRL_PYTHON or the
// repository's .venv-ref; skipped (with the reason) when none has huggingface_hub, unless
// PBRL_REQUIRE_FIXTURE_PYTHON=1 (then that is a failure).
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { downloadModel, resolveModelDir } from "../src/index.js";
import { addRepo, startHubDouble, type HubDouble } from "@pbrl/test-fixtures";
import { FIXTURES } from "./reference.js";

const run = promisify(execFile);
const SCRIPT = path.join(FIXTURES, "hub-find.py");
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const gitSha1 = (b: Buffer) => createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");

function findPython(): { python: string } | { reason: string } {
  const candidates = [
    process.env["PBRL_FIXTURE_PYTHON"],
    process.env["PBRL_PYTHON"],
    path.resolve(import.meta.dirname, "../../../.venv-ref/bin/python"),
  ].filter((p): p is string => !!p);
  for (const python of candidates) {
    if (!existsSync(python) && python.includes("/")) continue;
    try {
      execFileSync(python, ["-c", "import huggingface_hub"], { stdio: "ignore" });
      return { python };
    } catch {
      // try the next one
    }
  }
  return { reason: `no Python with huggingface_hub (tried ${candidates.join(", ")}): set PBRL_PYTHON, or pip install huggingface-hub into .venv-ref` };
}
const py = findPython();

let hub: HubDouble;
const saved = { ...process.env };
beforeAll(async () => {
  hub = await startHubDouble();
});
afterAll(() => hub.close());
afterEach(() => {
  process.env = { ...saved };
  hub.requests.length = 0;
});

function fixtureFiles(): Record<string, Buffer> {
  const dir = path.join(FIXTURES, "tiny-qwen2-sharded");
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f))]));
}

async function python(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  if (!("python" in py)) throw new Error(py.reason);
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HF_") && !k.startsWith("HUGGING")));
  const { stdout } = await run(py.python, [SCRIPT, ...args], { env: { ...clean, HF_HUB_DISABLE_TELEMETRY: "1", ...env }, timeout: 60_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
}

describe("the cache is shared with Python's huggingface_hub", () => {
  it("Python finds offline what pbrl downloaded, byte for byte, through blobs named by ETag", async (ctx) => {
    if (!("python" in py)) {
      if (process.env["PBRL_REQUIRE_FIXTURE_PYTHON"] === "1") throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${py.reason}`);
      ctx.skip(py.reason);
    }
    const cache = mkdtempSync(path.join(tmpdir(), "pbrl-hubpy-"));
    const files = fixtureFiles();
    const repo = addRepo(hub, "acme/to-python", files);
    const dir = await downloadModel("acme/to-python", { hubUrl: hub.hubUrl, cacheDir: cache, token: "hf_x" });
    const seen = (await python(["find", cache, "acme/to-python"], { HF_HUB_OFFLINE: "1" })) as {
      snapshot: string;
      config: string;
      files: Record<string, { link: string | null; real: string; sha256: string }>;
    };
    expect(seen.snapshot).toBe(dir);
    expect(seen.config).toBe(path.join(dir, "config.json"));
    expect(Object.keys(seen.files).sort()).toEqual(Object.keys(files).sort());
    const blobs = path.join(cache, "models--acme--to-python", "blobs");
    for (const [name, bytes] of Object.entries(files)) {
      const f = seen.files[name]!;
      expect(f.sha256).toBe(sha256(bytes));
      // What Python itself would have written: a relative link to blobs/<X-Linked-Etag or ETag>.
      const etag = name.endsWith(".safetensors") ? sha256(bytes) : gitSha1(bytes);
      expect(f.link).toBe(path.join("..", "..", "blobs", etag));
      expect(f.real).toBe(path.join(blobs, etag));
    }
    expect(dir.endsWith(repo.commit)).toBe(true);
  });

  it("pbrl finds offline what Python downloaded", async (ctx) => {
    if (!("python" in py)) {
      if (process.env["PBRL_REQUIRE_FIXTURE_PYTHON"] === "1") throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${py.reason}`);
      ctx.skip(py.reason);
    }
    const cache = mkdtempSync(path.join(tmpdir(), "pbrl-hubpy-"));
    const repo = addRepo(hub, "acme/from-python", fixtureFiles());
    const got = (await python(["download", cache, "acme/from-python"], { HF_ENDPOINT: hub.hubUrl })) as { snapshot: string };
    hub.requests.length = 0;
    process.env["HF_HUB_CACHE"] = cache;
    process.env["HF_HUB_OFFLINE"] = "1";
    const dir = await resolveModelDir("acme/from-python");
    expect(dir).toBe(got.snapshot);
    expect(dir).toBe(path.join(cache, "models--acme--from-python", "snapshots", repo.commit));
    expect(hub.requests).toEqual([]);
  });
});

// The packed packages installed with npm, from a registry, into a project outside the workspace,
// as a user's `npm install pbrl` does: @pbrl/core-tensor's install step builds the native addon
// there (and the libtorch addon where libtorch is found), and a training step runs on each. The
// registry is the global setup's (pack-workspace.ts) on 127.0.0.1, serving the packed packages and
// the lockfile's versions of their dependencies, so npm needs no network; its cache and config
// are the test's own.
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { registryMisses } from "./loopback-registry.js";
import { isolatedNpmEnv, npm } from "./npm-env.js";
import { FIXTURE, LIBTORCH_REQUIRED, NATIVE_REQUIRED, REBUILD_COMMAND } from "./workspace.js";

const MADPO_STEP = path.join(import.meta.dirname, "fixtures/madpo-step.mjs");
const execFileAsync = promisify(execFile);

let work: string;
let project: string;
let env: NodeJS.ProcessEnv;
let installLog: string;

/** Runs Node in the project (after the install: the registry is no longer needed, so blocking is fine). */
const node = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): string =>
  execFileSync(process.execPath, args, { cwd: project, env: { ...env, ...extraEnv }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

beforeAll(async () => {
  const packed = inject("packedPackages");
  work = mkdtempSync(path.join(tmpdir(), "pbrl-npm-consumer-"));
  project = path.join(work, "project");
  mkdirSync(project);
  writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "npm-consumer", private: true, type: "module", dependencies: Object.fromEntries(packed.map((p) => [p.name, p.version])) }, null, 2),
  );
  env = isolatedNpmEnv(path.join(work, "npm"), inject("registryUrl"));
  // --foreground-scripts: npm shows install scripts' output (the addon's one line) instead of hiding it.
  installLog = await npm(["install", "--foreground-scripts"], project, env).catch((e: Error) => {
    throw new Error(`${e.message}\nrequests the registry could not answer: ${registryMisses(inject("registryMissesFile"))}`);
  });
});

/** Bytes of the files under `dir` (links counted as themselves), but the top-level `skip` entries. */
function treeBytes(dir: string, skip: readonly string[] = []): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (skip.includes(entry.name)) continue;
    const p = path.join(dir, entry.name);
    bytes += entry.isDirectory() ? treeBytes(p) : lstatSync(p).size;
  }
  return bytes;
}

/** What an installed project may weigh in node_modules, TypeScript and @types left out (issue 30). */
const MAX_NODE_MODULES_BYTES = 150e6;

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe("packed packages installed by npm in a project outside the workspace", () => {
  it("build the native addon in @pbrl/core-tensor's install step, or say which command builds it", () => {
    const line = installLog.split("\n").find((l) => l.startsWith("pbrl native addon: "));
    expect(line, installLog).toBeDefined();
    if (NATIVE_REQUIRED) {
      expect(line).toMatch(/^pbrl native addon: built in [\d.]+ s against OpenBLAS \S+: the native backend is available$/);
    } else if (!line!.includes(": built in ")) {
      expect(line).toMatch(/^pbrl native addon: not built \(/);
      expect(line).toContain(REBUILD_COMMAND);
    }
  });

  it("run a MADPO training step on the native backend (where it could not build: on wasm, naming the rebuild command)", async () => {
    const built = existsSync(path.join(project, "node_modules/@pbrl/core-tensor/native/build/Release/pbrl_native.node"));
    expect(built || !NATIVE_REQUIRED).toBe(true);
    // Copied into the project: Node resolves its imports from where the script lies, and next to
    // this suite they would find the workspace's packages instead of the installed ones.
    copyFileSync(MADPO_STEP, path.join(project, "madpo-step.mjs"));
    const { stdout } = await execFileAsync(process.execPath, ["madpo-step.mjs", built ? "native" : "default", FIXTURE], {
      cwd: project,
      env,
      encoding: "utf8",
    });
    const step = JSON.parse(stdout) as { coreTensor: string; backend: string; loss: number; weights: number; changed: number[] };
    expect(step.coreTensor).toBe(pathToFileURL(path.join(project, "node_modules/@pbrl/core-tensor/dist/index.js")).href);
    if (built) {
      expect(step.backend).toMatch(/^tensor backend: native \(OpenBLAS sgemm, /);
    } else {
      expect(step.backend).toMatch(/^tensor backend: wasm \(.*native backend unavailable: native addon not built/);
      expect(step.backend).toContain(REBUILD_COMMAND);
    }
    expect(Number.isFinite(step.loss) && step.loss > 0).toBe(true);
    // Every weight of both agents takes part in the loss, so one AdamW step moves all of them.
    expect(step.changed).toEqual([step.weights, step.weights]);
  });

  it("build the libtorch addon in the same install step where libtorch is found, or say how to get it", () => {
    const line = installLog.split("\n").find((l) => l.startsWith("pbrl libtorch addon: "));
    expect(line, installLog).toBeDefined();
    if (LIBTORCH_REQUIRED) {
      expect(line).toMatch(/^pbrl libtorch addon: built in [\d.]+ s against libtorch \S+ \((CPU|CUDA)\) at \S+: the libtorch backend is available$/);
    } else if (!line!.includes(": built in ")) {
      expect(line).toMatch(/^pbrl libtorch addon: not built \(/);
      expect(line).toContain(REBUILD_COMMAND);
    }
  });

  it("run a MADPO training step on the libtorch backend where it was built", async (ctx) => {
    const built = existsSync(path.join(project, "node_modules/@pbrl/core-tensor/libtorch/build/Release/pbrl_libtorch.node"));
    expect(built || !LIBTORCH_REQUIRED).toBe(true);
    if (!built) ctx.skip();
    copyFileSync(MADPO_STEP, path.join(project, "madpo-step.mjs"));
    const { stdout } = await execFileAsync(process.execPath, ["madpo-step.mjs", "libtorch", FIXTURE], { cwd: project, env, encoding: "utf8" });
    const step = JSON.parse(stdout) as { coreTensor: string; backend: string; loss: number; weights: number; changed: number[] };
    expect(step.coreTensor).toBe(pathToFileURL(path.join(project, "node_modules/@pbrl/core-tensor/dist/index.js")).href);
    expect(step.backend).toMatch(/^tensor backend: libtorch \(libtorch \d+\.\d+\.\d+, /);
    expect(Number.isFinite(step.loss) && step.loss > 0).toBe(true);
    expect(step.changed).toEqual([step.weights, step.weights]);
  });

  it(`weigh at most ${MAX_NODE_MODULES_BYTES / 1e6} MB of node_modules (typescript and @types left out), without the @tensorflow/tfjs bundle`, () => {
    const modules = path.join(project, "node_modules");
    const bytes = treeBytes(modules, ["typescript", "@types", ".cache"]);
    const tensorflow = treeBytes(path.join(modules, "@tensorflow"));
    console.log(
      `npm-installed node_modules: ${(bytes / 1e6).toFixed(1)} MB (typescript and @types left out), of which @tensorflow ${(tensorflow / 1e6).toFixed(1)} MB`,
    );
    expect(bytes).toBeLessThanOrEqual(MAX_NODE_MODULES_BYTES);
    expect(readdirSync(path.join(modules, "@tensorflow")).sort()).toEqual(["tfjs-backend-cpu", "tfjs-backend-wasm", "tfjs-core"]);
    // The tensorflow backend's bindings: optional peers, checked when present, never installed.
    const coreTensor = JSON.parse(readFileSync(path.join(modules, "@pbrl/core-tensor/package.json"), "utf8")) as {
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    expect(coreTensor.peerDependencies).toEqual({ "@tensorflow/tfjs-node": "4.22.0", "@tensorflow/tfjs-node-gpu": "4.22.0" });
    expect(coreTensor.peerDependenciesMeta).toEqual({ "@tensorflow/tfjs-node": { optional: true }, "@tensorflow/tfjs-node-gpu": { optional: true } });
  });

  it("run pbrl bench from the installed CLI, the PyTorch script included", async () => {
    // --python names no Python: the script is looked for first, so "not found (from --python)" says it shipped.
    const args = [
      "bench",
      "--preset",
      "tiny",
      "--backends",
      "wasm",
      "--precision",
      "float32",
      "--steps",
      "1",
      "--no-demo-round",
      "--python",
      "/nonexistent/python",
      "--json",
    ];
    const { stdout } = await execFileAsync(path.join(project, "node_modules/.bin/pbrl"), args, { cwd: project, env, encoding: "utf8" });
    const { results } = JSON.parse(stdout) as { results: Record<string, Record<string, unknown>> };
    expect(results["pytorch"]).toEqual({ skipped: "/nonexistent/python: not found (from --python)" });
    expect(results["pbrl_wasm"]!["isolation"]).toBe("child process");
    expect(results["pbrl_wasm"]!["train_tokens_per_s"]).toBeGreaterThan(0);
  });

  it("name the rebuild command when asked for native without the addon", () => {
    const probe = `import { useBackend } from "@pbrl/core-tensor"; console.log(import.meta.resolve("@pbrl/core-tensor")); await useBackend("native").then(() => console.log("loaded"), (e) => console.log(e.message));`;
    const [resolved, message] = node(["--input-type=module", "-e", probe], { PBRL_NATIVE_ADDON: path.join(work, "missing/pbrl_native.node") }).split("\n");
    expect(resolved).toBe(pathToFileURL(path.join(project, "node_modules/@pbrl/core-tensor/dist/index.js")).href);
    expect(message).toContain("backend=native is unavailable: native addon not built");
    expect(message).toContain(`\`${REBUILD_COMMAND}\``);
  });
});

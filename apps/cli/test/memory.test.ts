// Work too large for the backend's tensor memory is bad input: exit code 2 with the estimate and
// what to do, never a crash of the wasm heap. In-process, and as a real `pbrl generate` process on
// wasm and on native (which skips, saying why, when its addon is not built, unless
// PBRL_REQUIRE_NATIVE=1).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNativeAddon } from "@pbrl/core-tensor";
import { runCli } from "./capture.js";
import { compileCli, packagesBuilt } from "./compiled-cli.js";

const DEMO = path.resolve(import.meta.dirname, "../assets/demo-model");
const TINY = path.resolve(import.meta.dirname, "../../../packages/models/test/fixtures/tiny-llama");
const native = loadNativeAddon();
const nativeSkip = native.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? undefined : native.reason;
const huge = ["generate", "--model", DEMO, "--prompt", "Once upon a time", "--num_return_sequences", "100000", "--max_new_tokens", "32", "--seed", "1"];
const GENERATE_ERROR = /^pbrl generate: not enough memory: generating 32 tokens for 100000 rows after a \d+-token prompt with this model \(llama, 1\.0M parameters, 4 layers, hidden 128, vocabulary 1024\) needs about \d+\.\d\d GB of tensor memory, more than the (wasm|native) backend can hold: its WebAssembly heap holds at most 4\.00 GB, whatever the machine has/m;

describe("pbrl with too much work for the heap", () => {
  it("generate --num_return_sequences 100000: exit code 2 and what to do", async () => {
    const { code, out, err } = await runCli(huge);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toMatch(GENERATE_ERROR);
    expect(err).toMatch(/forward pass over 100000 rows × \d+ tokens +\d/);
    expect(err).toMatch(/What to do: generate fewer rows at once \(fewer prompts or num_return_sequences per call.*backend=cpu/);
  });

  it("train with a batch the heap cannot hold: exit code 2 before anything is written", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-cli-memory-"));
    writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).length);\n");
    writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink"].map((prompt) => JSON.stringify({ prompt })).join("\n"));
    const out = path.join(dir, "out");
    const { code, err } = await runCli(["train", `agent_model=${TINY}`, `train_dataset=${path.join(dir, "train.jsonl")}`, `reward_func=${path.join(dir, "reward.mjs")}`, "train_batch_size=20000", "max_new_tokens=256", `output_dir=${out}`]);
    expect(code, err).toBe(2);
    expect(err).toMatch(/pbrl train: not enough memory: this madpo\w* run \(2 agents, .*its largest phase is the training step\) needs about/);
    expect(err).toMatch(/What to do: train on fewer sequences at once \(train_batch_size/);
  });
});

describe.skipIf(!packagesBuilt)("a real pbrl generate process", () => {
  let main = "";
  let cleanup = (): void => {};
  beforeAll(async () => {
    ({ main, cleanup } = await compileCli());
  }, 300_000);
  afterAll(() => cleanup());

  for (const [backend, skip] of [
    ["wasm", undefined],
    ["native", nativeSkip],
  ] as const) {
    it.skipIf(skip !== undefined)(`--backend ${backend}: exit code 2 with the memory error, no crash${skip !== undefined ? ` (skipped: ${skip})` : ""}`, async () => {
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        execFile(process.execPath, [main, ...huge, "--backend", backend], { maxBuffer: 1 << 24 }, (error, _stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stderr }));
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`tensor backend: ${backend}`));
      expect(r.stderr).toMatch(GENERATE_ERROR);
      expect(r.stderr).not.toMatch(/Aborted|out of bounds|outside the heap/);
    }, 120_000);
  }
});

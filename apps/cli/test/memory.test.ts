// Work too large for the backend's tensor memory is bad input: exit code 2 with the estimate and
// what to do, never a crash of the wasm heap. In-process, and as a real `pbrl generate` process on
// wasm and on native (which skips, saying why, when its addon is not built, unless
// PBRL_REQUIRE_NATIVE=1).
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, memoryCapacity, nativeThreads, registerMemoryLimit, useBackend } from "@pbrl/core-tensor";
import { runCli } from "./capture.js";
import { compileCli, packagesBuilt } from "./compiled-cli.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const DEMO = path.resolve(import.meta.dirname, "../assets/demo-model");
const TINY = TINY_LLAMA;
const native = loadNativeAddon();
const nativeSkip = native.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? undefined : native.reason;
const huge = ["generate", "--model", DEMO, "--prompt", "Once upon a time", "--num_return_sequences", "100000", "--max_new_tokens", "32", "--seed", "1"];
const GENERATE_ERROR =
  /^pbrl generate: not enough memory: generating 32 tokens for 100000 rows after a \d+-token prompt with this model \(llama, 1\.0M parameters, 4 layers, hidden 128, vocabulary 1024\) needs about \d+\.\d\d GB of tensor memory, more than the (wasm|native) backend can hold: its WebAssembly heap holds at most 4\.00 GB, whatever the machine has/m;

describe("pbrl with too much work for the heap", () => {
  it("generate --num_return_sequences 100000: exit code 2 and what to do", async () => {
    const { code, out, err } = await runCli(huge);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toMatch(GENERATE_ERROR);
    expect(err).toMatch(/KV cache .*100000 rows × \d+ positions.* +\d/);
    expect(err).toMatch(/What to do: generate fewer rows at once \(fewer prompts or num_return_sequences per call.*backend=cpu/);
  });

  it("train with a batch the heap cannot hold: exit code 2 before anything is written", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-cli-memory-"));
    writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).length);\n");
    writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink"].map((prompt) => JSON.stringify({ prompt })).join("\n"));
    const out = path.join(dir, "out");
    const { code, err } = await runCli([
      "train",
      `agent_model=${TINY}`,
      `train_dataset=${path.join(dir, "train.jsonl")}`,
      `reward_func=${path.join(dir, "reward.mjs")}`,
      "train_batch_size=20000",
      "max_new_tokens=256",
      `output_dir=${out}`,
    ]);
    expect(code, err).toBe(2);
    expect(err).toMatch(/pbrl train: not enough memory: this madpo\w* run \(2 agents, .*its largest phase is the training step\) needs about/);
    expect(err).toMatch(/What to do: train on fewer sequences at once \(train_batch_size/);
  });
});

const libtorch = loadLibtorchAddon(nativeThreads());
const libtorchSkip = libtorch.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : libtorch.reason;

describe.skipIf(libtorchSkip !== undefined)(
  `without --backend, work too large for the heap moves to libtorch${libtorchSkip !== undefined ? ` (skipped: ${libtorchSkip})` : ""}`,
  () => {
    it("generate runs there (exit 0) when the default backend cannot hold it, and stays put when --backend names one", async () => {
      const saved = { backend: process.env["PBRL_BACKEND"], native: process.env["PBRL_NATIVE"] };
      delete process.env["PBRL_BACKEND"];
      process.env["PBRL_NATIVE"] = "off"; // the default is then wasm
      const wasm = memoryCapacity("wasm");
      registerMemoryLimit("wasm", () => ({ limitBytes: 1 << 16, why: "a test's limit of 64 KB" }));
      try {
        const args = ["generate", "--model", TINY, "--prompt", "The cat", "--greedy", "--max_new_tokens", "3", "--json"];
        const moved = await runCli(args);
        expect(moved.code, moved.err).toBe(0);
        expect(moved.err).toMatch(
          /pbrl: tensor backend: wasm [^\n]*\npbrl generate: does not fit the wasm backend's tensor memory; running on libtorch\npbrl: tensor backend: libtorch /,
        );
        expect((JSON.parse(moved.out) as { results: { token_ids: number[] }[] }).results[0]!.token_ids).toHaveLength(3);
        const forced = await runCli([...args, "--backend", "wasm"]);
        expect(forced.code).toBe(2);
        expect(forced.err).toMatch(/not enough memory: .*more than the wasm backend can hold: a test's limit of 64 KB/);
      } finally {
        registerMemoryLimit("wasm", () => ({ limitBytes: wasm.limitBytes, why: wasm.why }));
        for (const [k, v] of [
          ["PBRL_BACKEND", saved.backend],
          ["PBRL_NATIVE", saved.native],
        ] as const) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
        await useBackend("wasm");
      }
    });
  },
);

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
    it.skipIf(skip !== undefined)(
      `--backend ${backend}: exit code 2 with the memory error, no crash${skip !== undefined ? ` (skipped: ${skip})` : ""}`,
      async () => {
        const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
          execFile(process.execPath, [main, ...huge, "--backend", backend], { maxBuffer: 1 << 24 }, (error, _stdout, stderr) =>
            resolve({ code: error === null ? 0 : (error.code as number | null), stderr }),
          );
        });
        expect(r.code, r.stderr).toBe(2);
        expect(r.stderr).toMatch(new RegExp(`tensor backend: ${backend}`));
        expect(r.stderr).toMatch(GENERATE_ERROR);
        expect(r.stderr).not.toMatch(/Aborted|out of bounds|outside the heap/);
      },
      120_000,
    );
  }
});

// backend="auto" in a trainer: the default backend (native when built, else wasm), except that a
// run asking for what only libtorch gives (bf16) starts on libtorch, and a run that does not fit
// the heap-bound backend's memory moves to libtorch (the agents are loaded again there). Needs the libtorch
// addon (skips, naming why, unless PBRL_REQUIRE_LIBTORCH=1); PBRL_BACKEND, which the test setup
// sets and which decides for "auto", is lifted for each test.
import { existsSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadLibtorchAddon, memoryCapacity, nativeThreads, registerMemoryLimit, tf, useBackend } from "@pbrl/core-tensor";
import { MADPOTrainer } from "../src/index.js";
import { unusedDir } from "./device-runs.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

describe.skipIf(missing !== undefined)(`backend="auto" in the trainers${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  const saved = { backend: process.env["PBRL_BACKEND"], native: process.env["PBRL_NATIVE"] };
  beforeEach(() => {
    delete process.env["PBRL_BACKEND"];
    process.env["PBRL_NATIVE"] = "off"; // the default is then wasm, whatever this machine has built
  });
  afterEach(async () => {
    for (const [k, v] of [
      ["PBRL_BACKEND", saved.backend],
      ["PBRL_NATIVE", saved.native],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await useBackend("wasm");
  });

  const run = async (args: Record<string, unknown>): Promise<{ lines: string[]; backend: string; outputDir: string }> => {
    const lines: string[] = [];
    const outputDir = unusedDir();
    const trainer = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: countE,
      args: small({ verbose: true, output_dir: outputDir, ...args }),
      log: (l) => lines.push(l),
    });
    await trainer.train();
    const backend = tf.getBackend();
    trainer.dispose();
    return { lines, backend, outputDir };
  };

  it("starts a bf16 run on libtorch", async () => {
    const r = await run({ bf16: true });
    expect(r.backend).toBe("libtorch");
    expect(r.lines.some((l) => /^pbrl: tensor backend: libtorch .*, bf16 matrix products$/.test(l))).toBe(true);
  });

  it("keeps a run that fits on the default backend, and moves one that does not to libtorch, where it trains", async () => {
    expect((await run({})).backend).toBe("wasm");
    const wasm = memoryCapacity("wasm");
    registerMemoryLimit("wasm", () => ({ limitBytes: 1 << 20, why: "a test's limit of 1 MB" }));
    try {
      const r = await run({});
      expect(r.backend).toBe("libtorch");
      const moved = r.lines.findIndex((l) =>
        /^pbrl: backend=auto: the run does not fit the wasm backend's tensor memory \(it needs about [\d.]+ GB\); it runs on libtorch$/.test(l),
      );
      expect(moved).toBeGreaterThanOrEqual(0);
      expect(r.lines.slice(moved + 1).some((l) => l.startsWith("pbrl: tensor backend: libtorch"))).toBe(true);
      expect(existsSync(r.outputDir)).toBe(true);
    } finally {
      registerMemoryLimit("wasm", () => ({ limitBytes: wasm.limitBytes, why: wasm.why }));
    }
  });
});

// `pbrl demo` with a smaller budget than its defaults, as a process with stderr piped: the trained
// agents must clearly beat their starting point on the eval texts, progress lines must come at
// least every 15 s, and the run's report must render.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { loadNativeAddon } from "@pbrl/core-tensor";
import { runCli } from "./capture.js";

// The built CLI (pnpm test builds it first): the demo reads its assets next to dist/.
const DIST_MAIN = path.resolve(import.meta.dirname, "../dist/main.js");

// `pbrl demo` picks native when its addon is built; the child is told the same explicitly,
// since this suite's setup sets PBRL_BACKEND for its own process.
const BACKEND = loadNativeAddon().ok ? "native" : "wasm";

describe("pbrl demo", () => {
  it.skipIf(!existsSync(DIST_MAIN))(
    "raises the eval reward of both agents together (small budget); piped, it is never silent for 15 s; its report renders",
    async () => {
      {
        const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-demo-")), "run");
        // stderr is a pipe here, as in CI or with nohup: progress comes as timestamped lines
        const child = spawn(
          process.execPath,
          [DIST_MAIN, "demo", `output_dir=${out}`, "num_iterations=2", "preference_num_candidates=6", "num_train_epochs=1"],
          { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PBRL_BACKEND: BACKEND } },
        );
        const started = Date.now();
        const lineTimes: number[] = [];
        let err = "";
        let stdout = "";
        child.stderr.on("data", (d: Buffer) => {
          err += d.toString();
          for (const _ of d.toString().matchAll(/\n/g)) lineTimes.push(Date.now());
        });
        child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
        const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
        const ended = Date.now();
        expect(code, err).toBe(0);
        const times = [started, ...lineTimes, ended];
        const gaps = times.slice(1).map((t, i) => (t - times[i]!) / 1000);
        const longest = Math.max(...gaps);
        console.log(
          `pbrl demo (${BACKEND}, piped): ${lineTimes.length} stderr lines in ${((ended - started) / 1000).toFixed(1)} s, longest gap ${longest.toFixed(1)} s`,
        );
        expect(longest, err).toBeLessThanOrEqual(15);
        expect(err).toMatch(/round 1\/2 collection: \d+\/\d+ \(/);
        const before = Number(/eval reward before: ([\d.]+)/.exec(stdout)![1]);
        const after = Number(/eval reward after : ([\d.]+)/.exec(stdout)![1]);
        expect(after).toBeGreaterThan(before + 0.1);
        expect(stdout).toMatch(/examples after training:\n {2}text: /);
        expect(stdout).toMatch(/see the run: pbrl report /);
        const evals = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { kind: string })
          .filter((m) => m.kind === "eval");
        expect(evals).toHaveLength(2);
        expect(readFileSync(path.join(out, "preference_replay", "iteration_0002.json"), "utf8")).toContain('"iteration":2');
        const report = await runCli(["report", out]);
        expect(report.code, report.err).toBe(0);
        const html = readFileSync(path.join(out, "report.html"), "utf8");
        expect(html).toMatch(/finished: 2 of 2 rounds/);
        expect((html.match(/data-point/g) ?? []).length).toBeGreaterThan(evals.length);
      }
    },
    600_000,
  );

  it("rejects a bad override before doing any work", async () => {
    const r = await runCli(["demo", "dpo_beta=0", "num_train_epoch=1"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/num_train_epoch: unknown key for trainer madpo_iter \(did you mean "num_train_epochs"\?\)/);
  });
});

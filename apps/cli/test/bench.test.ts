// `pbrl bench`: every metric is measured, no tensor leaks, clear usage errors.
import { describe, expect, it } from "vitest";
import { computeRatios, formatTable, type BenchReport } from "../src/bench/report.js";
import { PBRL_METRICS, RATE_METRICS, workloadsFor } from "../src/bench/workloads.js";
import { runCli } from "./capture.js";
import { compileCli, packagesBuilt, run } from "./compiled-cli.js";

type Json = Record<string, unknown>;

function expectMeasured(r: Json): void {
  for (const m of PBRL_METRICS) {
    expect(typeof r[m], m).toBe("number");
    expect(Number.isFinite(r[m]) && (r[m] as number) > 0, `${m} = ${String(r[m])}`).toBe(true);
  }
  expect(r["live_tensors_after"]).toBe(r["live_tensors_before"]);
}

describe("pbrl bench", () => {
  it("measures the tiny preset on wasm (in-process from the sources) and skips PyTorch", async () => {
    const { code, out, err } = await runCli(["bench", "--preset", "tiny", "--backends", "wasm", "--no-torch", "--json", "--steps", "2"]);
    expect(code, err).toBe(0);
    const report = JSON.parse(out) as { model: Json; machine: Json; workloads: Record<string, Json>; results: Record<string, Json>; ratios: Json };
    expect(Object.keys(report.results)).toEqual(["pbrl_wasm", "pytorch"]);
    const wasm = report.results["pbrl_wasm"]!;
    expectMeasured(wasm);
    expect(wasm["isolation"]).toBe("in-process");
    expect(wasm["parameters"]).toBe(report.model["parameters"]);
    expect(report.model["parameters"]).toBe(37_024);
    expect(wasm["workloads"]).toEqual({ ...workloadsFor("wasm", 2) });
    expect(report.workloads["pbrl_wasm"]).toEqual(wasm["workloads"]);
    expect(report.results["pytorch"]).toEqual({ skipped: "--no-torch" });
    expect(report.ratios).toEqual({});
    expect(report.machine["cpus"]).toBeGreaterThan(0);
    // Progress goes to stderr, so stdout is exactly one JSON document.
    expect(err).toMatch(/pbrl bench \[wasm\]: train step 2\/2/);
  });

  it("rejects bad flag values with exit code 2 and says what is expected", async () => {
    const cases: [string[], RegExp][] = [
      [["--preset", "huge"], /pbrl bench: --preset must be one of default, tiny, got "huge"/],
      [["--steps", "0"], /pbrl bench: --steps must be a positive integer, got "0"/],
      [["--steps", "two"], /pbrl bench: --steps must be a positive integer, got "two"/],
      [["--backends", "wasm,gpu"], /pbrl bench: --backends must be a comma-separated list of wasm, cpu, tensorflow, native, got "wasm,gpu"/],
      [["--backends", "wasm,wasm"], /--backends names a backend twice/],
      [["--no-torch", "--python", "python3"], /--python cannot be combined with --no-torch/],
      [["--step", "2"], /unknown option --step \(did you mean --steps\?\)/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(["bench", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).toBe("");
    }
  });

  it("computes pbrl/pytorch ratios and prints a table", () => {
    const w = workloadsFor("wasm", 1);
    const rates = Object.fromEntries(RATE_METRICS.map((m) => [m, 100]));
    const report: BenchReport = {
      model: { preset: "tiny", model_type: "llama", vocab_size: 256, parameters: 37_024 },
      machine: { cpus: 2, cpu_model: "test cpu", total_memory_gb: 1, node_version: "v20", platform: "linux", arch: "x64", load_average_at_start: [0, 0, 0] },
      workloads: { pbrl_wasm: w, pytorch: w },
      results: {
        pbrl_wasm: { ...rates, train_tokens_per_s: 50, peak_rss_mb: 100, workloads: w, description: "wasm", isolation: "child process" } as never,
        pytorch: { ...rates, peak_rss_mb: 400, workloads: w, torch_version: "2", transformers_version: "5", threads: 2, attn_implementation: "sdpa" } as never,
      },
      ratios: {},
      wall_s: 1,
    };
    report.ratios = computeRatios(report.results);
    const r = report.ratios["pbrl_wasm_vs_pytorch"]!;
    expect(r.train_tokens_per_s).toBe(0.5);
    expect(r.gen_b8_cached_tokens_per_s).toBe(1);
    expect(r.peak_rss_mb).toBe(0.25);
    expect(r.same_workloads).toBe(true);
    const table = formatTable(report);
    expect(table).toMatch(/train tokens\/s +50\.0 +100 +0\.500/);
    expect(table).toMatch(/peak RSS MB +100 +400 +0\.250/);
  });

  // Each backend in its own process needs the CLI as compiled JavaScript (see compiled-cli.ts).
  it.skipIf(!packagesBuilt)("runs each backend in its own child process from compiled JS, and reports a missing Python as skipped", async () => {
    const { main, cleanup } = await compileCli();
    try {
      const { stdout } = await run(process.execPath, [main, "bench", "--preset", "tiny", "--backends", "wasm,cpu", "--json", "--steps", "1", "--python", "/nonexistent/python"]);
      const report = JSON.parse(stdout) as { results: Record<string, Json>; workloads: Record<string, Json> };
      const { pbrl_wasm: wasm, pbrl_cpu: cpu, pytorch } = report.results;
      for (const r of [wasm!, cpu!]) {
        expectMeasured(r);
        expect(r["isolation"]).toBe("child process");
        expect(r["pid"]).not.toBe(process.pid);
      }
      expect(wasm!["pid"]).not.toBe(cpu!["pid"]);
      expect(report.workloads["pbrl_cpu"]).toMatchObject({ train_batch: 8, train_seq_len: 128, train_steps: 1, gen_new_tokens: 16 });
      expect(pytorch!["skipped"]).toMatch(/\/nonexistent\/python: not found \(from --python\)/);
    } finally {
      cleanup();
    }
  });
});

// `pbrl bench`: every metric is measured, no tensor leaks, clear usage errors.
import { availableParallelism } from "node:os";
import { beforeAll, describe, expect, it } from "vitest";
import { distributedAvailable } from "@pbrl/core-tensor";
import { secondRoundSeconds } from "../src/bench/ddp-round.js";
import { FLAT_RSS_MB_PER_ROUND, flatnessSummary, smallDemoWorkload, type RoundSample } from "../src/bench/demo-rounds.js";
import { computeRatios } from "../src/bench/ratios.js";
import { formatTable, type BenchReport } from "../src/bench/report.js";
import { PBRL_METRICS, RATE_METRICS, workloadsFor } from "../src/bench/workloads.js";
import { runCli } from "./capture.js";
import { compileCli, packagesBuilt, run } from "./compiled-cli.js";

type Json = Record<string, unknown>;

const groups = distributedAvailable();
const noGroups = groups.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : groups.reason;

function expectMeasured(r: Json): void {
  for (const m of PBRL_METRICS) {
    expect(typeof r[m], m).toBe("number");
    expect(Number.isFinite(r[m]) && (r[m] as number) > 0, `${m} = ${String(r[m])}`).toBe(true);
  }
  expect(r["live_tensors_after"]).toBe(r["live_tensors_before"]);
}

// One in-process run of the tiny wasm bench, with its demo round and 3 flatness rounds, serves the
// three tests below: each part of the report is checked on its own, the model workloads timed once.
let run3: { report: { model: Json; machine: Json; workloads: Record<string, Json>; results: Record<string, Json>; ratios: Json }; err: string };

describe("pbrl bench", () => {
  describe("one in-process run on wasm, with a demo round and 3 flatness rounds", () => {
    beforeAll(async () => {
      const t0 = performance.now();
      const { code, out, err } = await runCli(["bench", "--preset", "tiny", "--backends", "wasm", "--no-torch", "--json", "--steps", "2", "--rounds", "3"]);
      expect(code, err).toBe(0);
      run3 = { report: JSON.parse(out) as typeof run3.report, err };
      console.log(`pbrl bench --preset tiny --backends wasm --steps 2 --rounds 3: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }, 900_000);

    it("measures the tiny preset on wasm (in-process from the sources) and skips PyTorch", () => {
      const { report, err } = run3;
      expect(Object.keys(report.results)).toEqual(["pbrl_wasm", "pytorch", "pytorch_bf16"]);
      const wasm = report.results["pbrl_wasm"]!;
      expectMeasured(wasm);
      expect(wasm["isolation"]).toBe("in-process");
      expect(wasm["parameters"]).toBe(report.model["parameters"]);
      expect(report.model["parameters"]).toBe(37_024);
      // Every weight trains: the step's gradients are the model's size, within its activation peak.
      expect(wasm["train_gradients_mb"]).toBe((37_024 * 4) / 2 ** 20);
      expect(wasm["train_activation_peak_mb"]).toBeGreaterThan(wasm["train_gradients_mb"] as number);
      expect(wasm["workloads"]).toEqual({ ...workloadsFor("wasm", "small", 37_024, { steps: 2 }) });
      expect(report.workloads["pbrl_wasm"]).toEqual(wasm["workloads"]);
      expect(report.results["pytorch"]).toEqual({ skipped: "--no-torch" });
      expect(report.results["pytorch_bf16"]).toEqual({ skipped: "--no-torch" });
      expect(report.ratios).toEqual({});
      expect(report.machine["cpus"]).toBeGreaterThan(0);
      // Generation against the roofline measured in the same run (roofline.ts tests the formula).
      const roofline = wasm["generation_roofline"] as { gemm_gflops: number; read_gb_per_s: number; workloads: Record<string, Json> };
      expect(roofline.gemm_gflops).toBeGreaterThan(0);
      expect(roofline.read_gb_per_s).toBeGreaterThan(0);
      expect(Object.keys(roofline.workloads)).toEqual(["b1_cached", "b8_cached", "shared_1x16"]);
      expect(roofline.workloads["shared_1x16"]).toMatchObject({ prompts: 1, rows: 16, prompt_len: 16, new_tokens: 64 });
      for (const r of Object.values(roofline.workloads)) {
        expect(r["roofline_s"]).toBeGreaterThan(0);
        expect(r["roofline_fraction"]).toBeCloseTo((r["roofline_s"] as number) / (r["seconds"] as number), 9);
      }
      // parallel_training: the same sampling and updates in this thread and in worker threads, timed.
      const parallel = wasm["parallel_training"] as { workload: Json; generation: Json; update: Json };
      expect(parallel.workload).toEqual({
        agents: 2,
        gen_prompts: 8,
        gen_candidates: 8,
        gen_prompt_len: 16,
        gen_new_tokens: 32,
        pairs_per_update: 8,
        prompt_len: 16,
        completion_len: 48,
        updates: 2,
      });
      for (const t of [parallel.generation, parallel.update]) {
        for (const k of ["sequential_s", "mp_s", "speedup"]) expect(t[k]).toBeGreaterThan(0);
        expect(t["speedup"]).toBeCloseTo((t["sequential_s"] as number) / (t["mp_s"] as number), 6);
      }
      // wasm is deterministic: the workers sample and train bit for bit as this thread
      expect(parallel.generation["same_tokens"]).toBe(true);
      expect(parallel.update["max_abs_weight_diff"]).toBe(0);
      // MARLHF's RL stage: the same policy-gradient updates in this thread and in worker threads
      const rl = (wasm["parallel_training"] as { rl_update: Json }).rl_update;
      for (const k of ["sequential_s", "mp_s", "speedup"]) expect(rl[k]).toBeGreaterThan(0);
      expect(rl["generations"]).toBe(2);
      expect(rl["max_abs_weight_diff"]).toBe(0);
      expect(err).toMatch(
        /pbrl bench \[wasm\]: parallel_training: MARLHF policy-gradient update of 2 agents \(8 items × 2 samples\): [\d.]+ s in this thread, [\d.]+ s in worker threads/,
      );
      expect(err).toMatch(/pbrl bench \[wasm\]: parallel_training: MADPO update of 2 agents \(8 pairs\): [\d.]+ s in this thread, [\d.]+ s in worker threads/);
      // Progress goes to stderr, so stdout is exactly one JSON document.
      expect(err).toMatch(/pbrl bench \[wasm\]: train step 2\/2/);
    });

    it("times one round of the embedded demo (real collection and MADPO training) after the model workloads", () => {
      const { report, err } = run3;
      const wasm = report.results["pbrl_wasm"]!;
      const demo = wasm["demo_round"] as Json;
      expect(demo["workload"]).toEqual(smallDemoWorkload());
      expect(Number.isFinite(demo["demo_round_s"]) && (demo["demo_round_s"] as number) > 0, `demo_round_s = ${String(demo["demo_round_s"])}`).toBe(true);
      expect(demo["demo_run_s"] as number).toBeGreaterThanOrEqual(demo["demo_round_s"] as number);
      expect(demo["pairs"] as number).toBeGreaterThan(0);
      expect(demo["train_pairs"] as number).toBeGreaterThan(0);
      expect(demo["updates"]).toBe(Math.ceil((demo["train_pairs"] as number) / 8));
      expect(err).toMatch(/pbrl bench \[wasm\]: demo round: [\d.]+ s/);
    });

    it("--rounds N records live tensors, tf memory and RSS after each demo round and judges flatness", () => {
      const { report, err } = run3;
      const f = report.results["pbrl_wasm"]!["flatness"] as {
        rounds: number;
        series: RoundSample[];
        summary: Json;
        updates: number;
      };
      expect(f.rounds).toBe(3);
      expect(f).toMatchObject({ rss_after_gc: false, workload: smallDemoWorkload() });
      expect(f.series.map((s) => s.round)).toEqual([1, 2, 3]);
      for (const s of f.series) {
        expect(s.pairs, `round ${s.round}`).toBeGreaterThan(0);
        expect(s.round_s).toBeGreaterThan(0);
        expect(s.rss_mb).toBeGreaterThan(0);
      }
      // The tensors a run keeps across rounds (agents, AdamW moments) are the same after every round.
      expect(new Set(f.series.map((s) => s.live_tensors)).size, JSON.stringify(f.series)).toBe(1);
      expect(new Set(f.series.map((s) => s.tf_memory_bytes)).size).toBe(1);
      expect(f.summary["live_tensors_first"]).toBe(f.summary["live_tensors_last"]);
      expect(typeof f.summary["flat"]).toBe("boolean");
      expect(f.summary["meaning"]).toMatch(/live tensors/);
      expect(err).toMatch(/pbrl bench \[wasm\]: 3 demo rounds: live tensors (\d+) → \1, .*MB\/round, no gc\(\) before each sample\): (flat|NOT flat)/);
      console.log(`flatness (tiny rounds, wasm): ${JSON.stringify(f.series)}; ${JSON.stringify(f.summary)}`);
    });
  });

  it("judges flatness by equal tensors and tf memory and the slope of RSS from round 2", () => {
    const sample = (round: number, live: number, rss: number): RoundSample => ({
      round,
      round_s: 1,
      pairs: 8,
      train_pairs: 8,
      live_tensors: live,
      tf_memory_bytes: 1000,
      rss_mb: rss,
      js_heap_mb: 30,
      external_mb: 300,
    });
    const flat = flatnessSummary([sample(1, 50, 300), sample(2, 50, 340), sample(3, 50, 340.5), sample(4, 50, 341)]);
    expect(flat).toMatchObject({
      live_tensors_first: 50,
      live_tensors_last: 50,
      rss_mb_round_2: 340,
      rss_mb_last: 341,
      rss_growth_mb: 1,
      rss_growth_mb_per_round: 0.5,
      rss_slope_mb_per_round: 0.5,
      flat: true,
    });
    // One low sample at round 2 makes the endpoint growth large; the slope over all rounds is not.
    const jitter = flatnessSummary([300, 360, 390, 380, 376, 384, 378, 388, 376].map((rss, i) => sample(i + 1, 50, rss)));
    expect(jitter.rss_growth_mb_per_round).toBeGreaterThan(FLAT_RSS_MB_PER_ROUND);
    expect(jitter.rss_slope_mb_per_round).toBeLessThan(FLAT_RSS_MB_PER_ROUND);
    expect(jitter.flat).toBe(true);
    expect(flatnessSummary([sample(1, 50, 300), sample(2, 50, 300), sample(3, 51, 300)]).flat).toBe(false);
    expect(flatnessSummary([sample(1, 50, 300), sample(2, 50, 300), sample(3, 50, 300 + FLAT_RSS_MB_PER_ROUND)]).flat).toBe(false);
    expect(() => flatnessSummary([sample(1, 50, 300), sample(2, 50, 300)])).toThrow(/at least 3 rounds/);
  });

  it("rejects bad flag values with exit code 2 and says what is expected", async () => {
    const cases: [string[], RegExp][] = [
      [["--preset", "huge"], /pbrl bench: --preset must be one of default, tiny, smollm2-135m, qwen2.5-0.5b, got "huge"/],
      [["--steps", "0"], /pbrl bench: --steps must be a positive integer, got "0"/],
      [["--steps", "two"], /pbrl bench: --steps must be a positive integer, got "two"/],
      [["--backends", "wasm,gpu"], /pbrl bench: --backends must be a comma-separated list of wasm, cpu, tensorflow, native, libtorch, got "wasm,gpu"/],
      [["--backends", "wasm,wasm"], /--backends names a backend twice/],
      [["--no-torch", "--python", "python3"], /--python cannot be combined with --no-torch/],
      [["--step", "2"], /unknown option --step \(did you mean --steps\?\)/],
      [["--rounds", "2"], /pbrl bench: --rounds must be an integer of at least 3 \(RSS growth is measured from round 2 to the last\), got "2"/],
      [["--rounds", "twenty"], /pbrl bench: --rounds must be an integer of at least 3/],
      [["--rounds", "3.5"], /pbrl bench: --rounds must be an integer of at least 3/],
      [["--no-demo-round=yes"], /pbrl bench: .*--no-demo-round/],
      [["--no-demo-rounds"], /unknown option --no-demo-rounds \(did you mean --no-demo-round\?\)/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(["bench", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.out).toBe("");
    }
  });

  it("computes pbrl/pytorch ratios and prints a table", () => {
    const w = workloadsFor("wasm", "small", 37_024, { steps: 1 });
    const rates = Object.fromEntries(RATE_METRICS.map((m) => [m, 100]));
    const report: BenchReport = {
      model: { preset: "tiny", model_type: "llama", vocab_size: 256, parameters: 37_024 },
      machine: {
        cpus: 2,
        cpu_model: "test cpu",
        cpu_flags: null,
        total_memory_gb: 1,
        node_version: "v20",
        platform: "linux",
        arch: "x64",
        load_average_at_start: [0, 0, 0],
      },
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
  it.skipIf(!packagesBuilt)(
    "runs each backend in its own child process from compiled JS, and reports a missing Python as skipped",
    async () => {
      const { main, cleanup } = await compileCli();
      try {
        const { stdout } = await run(process.execPath, [
          main,
          "bench",
          "--preset",
          "tiny",
          "--backends",
          "wasm,cpu",
          "--json",
          "--steps",
          "1",
          "--no-demo-round",
          "--python",
          "/nonexistent/python",
        ]);
        const report = JSON.parse(stdout) as { results: Record<string, Json>; workloads: Record<string, Json> };
        const { pbrl_wasm: wasm, pbrl_cpu: cpu, pytorch } = report.results;
        for (const r of [wasm!, cpu!]) {
          expectMeasured(r);
          expect(r["isolation"]).toBe("child process");
          expect(r["pid"]).not.toBe(process.pid);
          expect(r["demo_round"]).toEqual({ skipped: "--no-demo-round" });
          expect(r).not.toHaveProperty("flatness");
        }
        expect(wasm!["pid"]).not.toBe(cpu!["pid"]);
        expect(report.workloads["pbrl_cpu"]).toMatchObject({ train_batch: 8, train_seq_len: 128, train_steps: 1, gen_new_tokens: 16 });
        expect(pytorch!["skipped"]).toMatch(/\/nonexistent\/python: not found \(from --python\)/);
      } finally {
        cleanup();
      }
      // Compiling the CLI, then the pure-JS cpu backend's training step: 42 s alone, past
      // 120 s on a loaded 2-core machine.
    },
    360_000,
  );

  // parallel_training.ddp starts `pbrl train` ranks: only from the compiled CLI, on libtorch with process groups.
  it.skipIf(!packagesBuilt || noGroups !== undefined)(
    "parallel_training.ddp: round 2 of the demo settings as pbrl train runs in one process, with mp and on 2 ranks, timed",
    async () => {
      const { main, cleanup } = await compileCli();
      try {
        const { stdout, stderr } = await run(process.execPath, [
          main,
          "bench",
          "--preset",
          "tiny",
          "--backends",
          "libtorch",
          "--precision",
          "float32",
          "--no-torch",
          "--json",
          "--steps",
          "1",
          "--no-demo-round",
        ]);
        const report = JSON.parse(stdout) as { results: Record<string, Json> };
        const ddp = (report.results["pbrl_libtorch"]!["parallel_training"] as Json)["ddp"] as Json;
        expect(ddp["failed"], stderr).toBeUndefined();
        expect(ddp["workload"]).toEqual(smallDemoWorkload());
        const cores = availableParallelism();
        const share = Math.max(1, Math.floor(cores / 2));
        expect(ddp["ranks"]).toBe(2);
        expect(ddp["threads"]).toEqual({ none: cores, mp: share, ddp: share });
        const round = ddp["round_s"] as Record<string, number>;
        for (const mode of ["none", "mp", "ddp"]) expect(round[mode], mode).toBeGreaterThan(0);
        expect(ddp["speedup"]).toEqual({ mp: round["none"]! / round["mp"]!, ddp: round["none"]! / round["ddp"]! });
        expect(stderr).toMatch(/pbrl bench \[libtorch\]: parallel_training: demo round 2 with parallel_training=ddp \(\d+ threads? each\): [\d.]+ s/);
      } finally {
        cleanup();
      }
    },
    360_000,
  );
});

describe("secondRoundSeconds", () => {
  it("is round 2's last logged update minus round 1's, other kinds and rounds ignored", () => {
    const lines = [
      { kind: "round", round: 1, elapsed_s: 0.5 },
      { kind: "train", round: 1, elapsed_s: 1.25 },
      { kind: "train", round: 1, elapsed_s: 2 },
      { kind: "round", round: 2, elapsed_s: 3 },
      { kind: "train", round: 2, elapsed_s: 4 },
      { kind: "train", round: 2, elapsed_s: 5.5 },
      { kind: "train", round: 3, elapsed_s: 9 },
    ];
    expect(secondRoundSeconds(`${lines.map((l) => JSON.stringify(l)).join("\n")}\n`)).toBe(3.5);
    expect(() => secondRoundSeconds(JSON.stringify(lines[1]))).toThrow(/round 1 or of round 2/);
  });
});

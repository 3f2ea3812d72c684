// `pbrl bench` at real sizes: the presets' shapes, --model DIR, the per-precision columns, the
// memory limit reported instead of a crash, the ratios against both PyTorch columns.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { loadLibtorchAddon } from "@pbrl/core-tensor";
import { parameterSpecs, parseModelConfig } from "@pbrl/models";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { describe, expect, it } from "vitest";
import { fastInitValues, fastRandomModel } from "../src/bench/fast-init.js";
import { CPU_FLAGS, parseCpuFlags } from "../src/bench/machine.js";
import { parameterCount, presetConfigJson } from "../src/bench/presets.js";
import { computeRatios, type Outcome } from "../src/bench/ratios.js";
import { formatTable, type BenchReport } from "../src/bench/report.js";
import { BF16_WEIGHTS_METRICS, workloadsFor } from "../src/bench/workloads.js";
import { runCli } from "./capture.js";

type Json = Record<string, unknown>;
type Report = { model: Json; machine: Json; workloads: Record<string, Json>; results: Record<string, Json>; ratios: Record<string, Json> };

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const fixture = TINY_LLAMA;
const venvPython = path.join(repo, ".venv-ref", "bin", "python");
const libtorchBuilt = loadLibtorchAddon(1).ok;

async function bench(args: string[]): Promise<{ code: number; report: Report; err: string }> {
  const { code, out, err } = await runCli(["bench", "--json", ...args]);
  expect(code, err).toBe(0);
  return { code, report: JSON.parse(out) as Report, err };
}

describe("pbrl bench presets and workloads", () => {
  it("smollm2-135m and qwen2.5-0.5b have the checkpoints' shapes and parameter counts", () => {
    const smol = parseModelConfig(presetConfigJson("smollm2-135m"));
    expect(smol).toMatchObject({
      modelType: "llama",
      hiddenSize: 576,
      intermediateSize: 1536,
      numLayers: 30,
      numHeads: 9,
      numKvHeads: 3,
      headDim: 64,
      vocabSize: 49152,
      tieWordEmbeddings: true,
      ropeTheta: 100000,
      rmsNormEps: 1e-5,
      maxPositionEmbeddings: 8192,
      qkvBias: false,
    });
    expect(parameterCount(smol)).toBe(134_515_008);
    const qwen = parseModelConfig(presetConfigJson("qwen2.5-0.5b"));
    expect(qwen).toMatchObject({
      modelType: "qwen2",
      hiddenSize: 896,
      intermediateSize: 4864,
      numLayers: 24,
      numHeads: 14,
      numKvHeads: 2,
      headDim: 64,
      vocabSize: 151936,
      tieWordEmbeddings: true,
      ropeTheta: 1_000_000,
      rmsNormEps: 1e-6,
      qkvBias: true,
      oBias: false,
    });
    expect(parameterCount(qwen)).toBe(494_032_768);
    expect(parameterSpecs(qwen).some((s) => s.name === "lm_head.weight")).toBe(false);
    // The small presets are unchanged.
    expect(parameterCount(parseModelConfig(presetConfigJson("default")))).toBe(8_842_496);
    expect(parameterCount(parseModelConfig(presetConfigJson("tiny")))).toBe(37_024);
  });

  it("gives real sizes batch 4 or 2 × 128, one warm-up and cached generation, and lets flags override", () => {
    expect(workloadsFor("libtorch", "real", 134_515_008)).toMatchObject({
      train_batch: 4,
      train_seq_len: 128,
      train_steps: 3,
      train_warmup_steps: 1,
      gen_batch_sizes: [1, 8],
      gen_uncached: false,
    });
    expect(workloadsFor("pytorch", "real", 494_032_768)).toMatchObject({ train_batch: 2, train_seq_len: 128, gen_uncached: false });
    expect(workloadsFor("libtorch", "real", 494_032_768, { steps: 2, trainBatch: 1, trainSeq: 64, uncached: true })).toMatchObject({
      train_batch: 1,
      train_seq_len: 64,
      train_steps: 2,
      gen_uncached: true,
    });
    expect(workloadsFor("wasm", "small", 8_842_496)).toMatchObject({
      train_batch: 8,
      train_seq_len: 128,
      train_steps: 3,
      train_warmup_steps: 2,
      gen_new_tokens: 64,
      gen_uncached: true,
    });
    expect(workloadsFor("cpu", "small", 8_842_496)).toMatchObject({ train_steps: 1, gen_new_tokens: 16 });
  });

  it("fills weights from a fast seeded stream with transformers' standard deviation", () => {
    const std = 0.02;
    const values = (name: string, seed: number) => fastInitValues({ name, shape: [500, 1000], kind: "linear" }, std, seed);
    const a = values("w", 0);
    const same = (x: Float32Array, y: Float32Array) => Buffer.from(x.buffer).equals(Buffer.from(y.buffer));
    expect(same(values("w", 0), a)).toBe(true);
    expect(same(values("w2", 0), a)).toBe(false);
    expect(same(values("w", 1), a)).toBe(false);
    let sum = 0;
    let sq = 0;
    let max = 0;
    for (const x of a) {
      sum += x;
      sq += x * x;
      max = Math.max(max, Math.abs(x));
    }
    expect(Math.abs(sum / a.length)).toBeLessThan(1e-4);
    expect(Math.sqrt(sq / a.length)).toBeCloseTo(std, 3);
    expect(max).toBeLessThanOrEqual(Math.sqrt(3) * std + 1e-6);
    expect(max).toBeGreaterThan(0.99 * Math.sqrt(3) * std);
    expect([...fastInitValues({ name: "n", shape: [8], kind: "norm" }, std, 0)]).toEqual(Array(8).fill(1));
    expect([...fastInitValues({ name: "b", shape: [8], kind: "bias" }, std, 0)]).toEqual(Array(8).fill(0));
    const config = parseModelConfig(presetConfigJson("tiny"));
    const model = fastRandomModel(config, 0);
    try {
      expect(model.numParameters()).toBe(37_024);
    } finally {
      model.dispose();
    }
  });

  it("reads the CPU flags from /proc/cpuinfo", () => {
    const flags = parseCpuFlags("processor\t: 0\nflags\t\t: fpu avx2 fma avx512f avx512_bf16 amx_tile\n\nprocessor\t: 1\n");
    expect(flags).toMatchObject({ avx2: true, avx512f: true, avx512_bf16: true, amx_tile: true, amx_bf16: false, avx512_vnni: false });
    expect(Object.keys(flags!)).toEqual([...CPU_FLAGS]);
    expect(parseCpuFlags("no flags here")).toBeNull();
  });
});

describe("pbrl bench at real sizes", () => {
  it("reports wasm at SmolLM2-135M size as not measured with the MemoryBudgetError message, before building the model", async () => {
    const { report, err } = await bench(["--preset", "smollm2-135m", "--backends", "wasm", "--no-torch"]);
    const wasm = report.results["pbrl_wasm"]!;
    expect(wasm["error"]).toBe("MemoryBudgetError");
    expect(wasm["not_measured"]).toMatch(
      /a training step of this model \(llama, 134\.5M parameters.*\) on 4 sequences × 128 tokens needs about [\d.]+ GB of tensor memory, more than the wasm backend can hold/,
    );
    expect(wasm["not_measured"]).toMatch(/--train_batch/);
    expect(report.workloads["pbrl_wasm"]).toMatchObject({ train_batch: 4, train_seq_len: 128 });
    expect(report.model).toMatchObject({ preset: "smollm2-135m", model_type: "llama", parameters: 134_515_008 });
    expect(report.ratios).toEqual({});
    expect(err).toMatch(/pbrl bench \[wasm\]: not measured: /);
    // Refused before the model was built: no load line.
    expect(err).not.toMatch(/model (loaded from|randomly initialised)/);
  });

  // One run for both sides (Python's start-up dominates the PyTorch columns): PyTorch is checked
  // when the reference venv exists, pbrl's wasm column always.
  it("runs --model DIR (the tiny Llama fixture) end to end: wasm, and PyTorch float32 and bf16 autocast with bf16-weights generation", async () => {
    const torch = existsSync(venvPython) ? ["--python", venvPython] : ["--no-torch"];
    const { report } = await bench(["--model", fixture, "--backends", "wasm", ...torch, "--steps", "1", "--train_batch", "2", "--train_seq", "16"]);
    expect(report.model).toMatchObject({ preset: null, model_dir: fixture, model_type: "llama", hidden_size: 64, vocab_size: 384, parameters: 110_912 });
    const wasm = report.results["pbrl_wasm"]!;
    expect(wasm["parameters"]).toBe(110_912);
    expect(wasm["load_s"]).toBeGreaterThan(0);
    expect(wasm["workloads"]).toMatchObject({ train_batch: 2, train_seq_len: 16, train_steps: 1, train_warmup_steps: 2, gen_uncached: true });
    for (const m of ["train_tokens_per_s", "gen_b1_cached_tokens_per_s", "gen_b8_uncached_tokens_per_s", "peak_rss_mb"]) expect(wasm[m], m).toBeGreaterThan(0);
    expect(wasm["live_tensors_after"]).toBe(wasm["live_tensors_before"]);
    expect((wasm["parallel_training"] as Json)["skipped"]).toMatch(/--preset default or tiny/);
    expect((wasm["demo_round"] as Json)["skipped"]).toMatch(/--preset default or tiny/);
    expect(report.machine["cpu_model"]).toEqual(expect.any(String));
    expect(report.machine).toHaveProperty("cpu_flags");
    if (!existsSync(venvPython)) {
      expect(report.results["pytorch"]).toEqual({ skipped: "--no-torch" });
      return;
    }
    const [pt, bf] = [report.results["pytorch"]!, report.results["pytorch_bf16"]!];
    expect(pt).toMatchObject({ precision: "float32", parameters: 110_912 });
    expect(bf).toMatchObject({ precision: "bf16", parameters: 110_912 });
    for (const r of [pt, bf])
      for (const m of ["train_tokens_per_s", "gen_b1_cached_tokens_per_s", "gen_b8_uncached_tokens_per_s", "load_s", "peak_rss_mb"])
        expect(r[m], m).toBeGreaterThan(0);
    for (const m of BF16_WEIGHTS_METRICS) {
      expect(bf[m], m).toBeGreaterThan(0);
      expect(pt).not.toHaveProperty(m);
    }
    expect(report.workloads["pytorch"]).toEqual(report.workloads["pbrl_wasm"]);
    expect(Object.keys(report.ratios)).toEqual(["pbrl_wasm_vs_pytorch", "pbrl_wasm_vs_pytorch_bf16", "pbrl_wasm_vs_pytorch_best"]);
    const best = report.ratios["pbrl_wasm_vs_pytorch_best"]!;
    const better = (pt["train_tokens_per_s"] as number) >= (bf["train_tokens_per_s"] as number) ? pt : bf;
    expect(best["pytorch_best"]).toBe(better === pt ? "pytorch" : "pytorch_bf16");
    expect(best["train_tokens_per_s"]).toBeCloseTo((wasm["train_tokens_per_s"] as number) / (better["train_tokens_per_s"] as number), 3);
    expect(report.ratios["pbrl_wasm_vs_pytorch"]!["load_s"]).toBeGreaterThan(0);
  });

  it.skipIf(!libtorchBuilt)("runs libtorch in float32 and bf16 columns, and --precision narrows them", async () => {
    const both = await bench(["--preset", "tiny", "--backends", "libtorch", "--no-torch", "--steps", "1", "--no-demo-round"]);
    const f32 = both.report.results["pbrl_libtorch"]!;
    const bf16 = both.report.results["pbrl_libtorch_bf16"]!;
    expect(f32["precision"]).toBe("float32");
    expect(bf16["precision"]).toBe("bf16");
    for (const r of [f32, bf16])
      for (const m of ["train_tokens_per_s", "gen_b8_cached_tokens_per_s", "load_s", "peak_rss_mb"]) expect(r[m], m).toBeGreaterThan(0);
    // bf16 decodes with bfloat16 copies of the weights: its cached rates are the bf16-weights rates.
    for (const m of BF16_WEIGHTS_METRICS) {
      expect(f32).not.toHaveProperty(m);
      expect(bf16[m]).toBe(bf16[m.replace("_bf16_weights", "")]);
    }
    expect((bf16["parallel_training"] as Json)["skipped"]).toMatch(/float32 column/);
    // ddp starts `pbrl train` ranks, which this in-process bench (from the sources) cannot.
    expect(((f32["parallel_training"] as Json)["ddp"] as Json)["skipped"]).toMatch(/compiled JavaScript|process groups/);

    const narrowed = await bench(["--preset", "tiny", "--backends", "libtorch,wasm", "--no-torch", "--steps", "1", "--no-demo-round", "--precision", "bf16"]);
    expect(Object.keys(narrowed.report.results)).toEqual(["pbrl_libtorch_bf16", "pbrl_wasm", "pytorch", "pytorch_bf16"]);
    expect(narrowed.report.results["pbrl_wasm"]).toEqual({ skipped: "--precision bf16: the wasm backend computes in float32 only" });
    expect(narrowed.report.results["pbrl_libtorch_bf16"]!["train_tokens_per_s"]).toBeGreaterThan(0);
  });

  it("computes ratios against both PyTorch columns and the better one, and tables not-measured columns", () => {
    const w = workloadsFor("libtorch", "real", 134_515_008);
    const cached = { gen_b1_cached_tokens_per_s: 20, gen_b8_cached_tokens_per_s: 80 };
    const results: Record<string, Outcome> = {
      pbrl_libtorch: {
        ...cached,
        train_tokens_per_s: 200,
        peak_rss_mb: 3000,
        load_s: 1,
        workloads: w,
        precision: "float32",
        description: "libtorch",
        isolation: "child process",
      } as never,
      pbrl_libtorch_bf16: {
        ...cached,
        train_tokens_per_s: 300,
        gen_b1_cached_bf16_weights_tokens_per_s: 40,
        peak_rss_mb: 3000,
        load_s: 1,
        workloads: w,
        precision: "bf16",
        description: "libtorch",
        isolation: "child process",
      } as never,
      pbrl_wasm: { backend: "wasm", precision: "float32", not_measured: "a training step … needs about 8.9 GB\nEstimated need: …", error: "MemoryBudgetError" },
      pytorch: { ...cached, train_tokens_per_s: 100, peak_rss_mb: 3400, load_s: 2, workloads: w, precision: "float32" } as never,
      pytorch_bf16: {
        ...cached,
        train_tokens_per_s: 150,
        gen_b1_cached_bf16_weights_tokens_per_s: 25,
        peak_rss_mb: 3000,
        load_s: 2,
        workloads: w,
        precision: "bf16",
      } as never,
    };
    const ratios = computeRatios(results);
    expect(Object.keys(ratios)).toEqual([
      "pbrl_libtorch_vs_pytorch",
      "pbrl_libtorch_vs_pytorch_bf16",
      "pbrl_libtorch_vs_pytorch_best",
      "pbrl_libtorch_bf16_vs_pytorch",
      "pbrl_libtorch_bf16_vs_pytorch_bf16",
      "pbrl_libtorch_bf16_vs_pytorch_best",
    ]);
    expect(ratios["pbrl_libtorch_vs_pytorch"]).toMatchObject({
      train_tokens_per_s: 2,
      gen_b1_cached_tokens_per_s: 1,
      peak_rss_mb: 0.8824,
      load_s: 0.5,
      same_workloads: true,
    });
    // Uncached generation was not timed: no ratio rather than NaN.
    expect(ratios["pbrl_libtorch_vs_pytorch"]).not.toHaveProperty("gen_b1_uncached_tokens_per_s");
    expect(ratios["pbrl_libtorch_bf16_vs_pytorch_best"]).toMatchObject({ train_tokens_per_s: 2, pytorch_best: "pytorch_bf16" });
    // bf16 weights: against PyTorch's float32 cached rate in *_vs_pytorch, against its bf16 weights in *_vs_pytorch_bf16.
    expect(ratios["pbrl_libtorch_bf16_vs_pytorch"]!.gen_b1_cached_bf16_weights_tokens_per_s).toBe(2);
    expect(ratios["pbrl_libtorch_bf16_vs_pytorch_bf16"]!.gen_b1_cached_bf16_weights_tokens_per_s).toBe(1.6);
    const report: BenchReport = {
      model: { preset: "smollm2-135m", model_type: "llama", parameters: 134_515_008 },
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
      workloads: { pbrl_libtorch: w },
      results,
      ratios,
      wall_s: 1,
    };
    const table = formatTable(report);
    expect(table).toMatch(/pbrl_wasm: not measured — a training step … needs about 8\.9 GB$/m);
    expect(table).toMatch(/model load s +1\.00 +1\.00 +– +2\.00 +2\.00 +0\.500/);
    expect(table).not.toMatch(/uncached/);
  });

  it("rejects bad flag values with exit code 2 and says what is expected", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pbrl-bench-model-"));
    writeFileSync(path.join(dir, "config.json"), JSON.stringify({ model_type: "gpt2", vocab_size: 10 }));
    try {
      const cases: [string[], RegExp][] = [
        [["--preset", "tiny", "--model", fixture], /--preset and --model cannot be combined/],
        [["--model", "/nonexistent/model"], /--model must be a checkpoint folder with a config.json, got "\/nonexistent\/model"/],
        [["--model", dir], /--model ".*": .*model_type "gpt2" is not supported/],
        [["--train_batch", "0"], /--train_batch must be a positive integer, got "0"/],
        [["--train_batch", "four"], /--train_batch must be a positive integer, got "four"/],
        [["--train_seq", "1"], /--train_seq must be an integer of at least 2/],
        [["--precision", "fp16"], /--precision must be float32 or bf16, got "fp16"/],
        [["--precision", "bf16", "--backends", "wasm", "--no-torch"], /--precision bf16 needs libtorch in --backends/],
        [["--train-batch", "2"], /unknown option --train-batch \(did you mean --train_batch\?\)/],
        [["--uncached=yes"], /pbrl bench: .*--uncached/],
      ];
      for (const [args, message] of cases) {
        const r = await runCli(["bench", ...args]);
        expect(r.code, args.join(" ")).toBe(2);
        expect(r.err).toMatch(message);
        expect(r.out).toBe("");
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

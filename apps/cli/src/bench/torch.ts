/**
 * The PyTorch side of `pbrl bench`: finds a Python with torch and transformers and runs
 * assets/bench/torch_bench.py (shipped with the CLI) on the same model and workloads. Never fails the bench: when
 * PyTorch cannot run, the result says why.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { CliIO } from "../io.js";
import { lastLine, runChild, tail } from "./child.js";
import type { Bf16WeightsMetric, GenMetric, VariantMetric, Workloads } from "./workloads.js";

/** float32, or bf16: torch.autocast("cpu", dtype=torch.bfloat16) around forward and loss, AdamW in float32. */
export type TorchPrecision = "float32" | "bf16";

export type TorchMeasured = {
  python: string;
  precision: TorchPrecision;
  torch_version: string;
  transformers_version: string;
  threads: number;
  /** torch.backends.cpu.get_cpu_capability(): the ATen kernels' instruction set ("AVX512", …). */
  cpu_capability: string;
  attn_implementation: string;
  parameters: number;
  workloads: Workloads;
  /** Seconds to build the model: config + random init for a preset, from_pretrained for --model. */
  load_s: number;
  peak_rss_mb: number;
  /** ru_maxrss right after building or loading the model. */
  peak_rss_mb_after_load: number;
  train_step_s_mean: number;
  wall_s: number;
  cpu_s: number;
  /** Set by `pbrl bench` when it timed the demo on pbrl: PyTorch has no demo to time. */
  demo_round?: { not_measured: string };
  flatness?: { not_measured: string };
} & Record<"train_tokens_per_s" | "gen_b1_cached_tokens_per_s" | "gen_b8_cached_tokens_per_s", number> &
  Partial<Record<GenMetric | Bf16WeightsMetric | VariantMetric, number>>;

export type TorchResult = TorchMeasured | { skipped: string } | { failed: string };

/** The PyTorch side, in the CLI package's assets (from src/bench under vitest, from dist/bench when built). */
const TORCH_BENCH_SCRIPT = fileURLToPath(new URL("../../assets/bench/torch_bench.py", import.meta.url));

/** The pbrl checkout this CLI file lives in: the nearest folder above it with pnpm-workspace.yaml. */
export function findRepoRoot(from = path.dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "pnpm-workspace.yaml"))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** Why `python` cannot run the bench, or undefined when `import torch, transformers` works. */
function torchProblem(python: string): string | undefined {
  const r = spawnSync(python, ["-c", "import torch, transformers"], { encoding: "utf8", timeout: 120_000 });
  if (r.error !== undefined) return `${python}: ${(r.error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : r.error.message}`;
  if (r.status !== 0) {
    const last = r.stderr.trim().split("\n").pop() ?? `exit code ${r.status}`;
    return `${python}: \`import torch, transformers\` failed (${last})`;
  }
  return undefined;
}

/**
 * The Python to use: --python, else $PBRL_PYTHON (both taken as given, no fallback), else the
 * reference venv <repo>/.venv-ref/bin/python, else python3, the first whose import works.
 */
export function findTorchPython(explicit: string | undefined, repoRoot: string | undefined): { python: string } | { skipped: string } {
  const given = explicit ?? process.env["PBRL_PYTHON"];
  if (given !== undefined && given !== "") {
    const problem = torchProblem(given);
    return problem === undefined ? { python: given } : { skipped: `${problem} (from ${explicit !== undefined ? "--python" : "PBRL_PYTHON"})` };
  }
  const candidates = [...(repoRoot !== undefined ? [path.join(repoRoot, ".venv-ref", "bin", "python")] : []), "python3"];
  const problems: string[] = [];
  for (const python of candidates) {
    if (path.isAbsolute(python) && !existsSync(python)) {
      problems.push(`${python}: not found`);
      continue;
    }
    const problem = torchProblem(python);
    if (problem === undefined) return { python };
    problems.push(problem);
  }
  return { skipped: `no Python with torch and transformers (${problems.join("; ")}); pass --python PATH or set PBRL_PYTHON` };
}

/** Runs torch_bench.py, forwarding its progress lines to stderr. */
export async function runTorchBench(options: {
  python: string;
  script: string;
  config: Record<string, unknown>;
  /** A checkpoint folder (--model): loaded with from_pretrained instead of initialised from `config`. */
  modelDir?: string | undefined;
  precision: TorchPrecision;
  workloads: Workloads;
  io: CliIO;
}): Promise<TorchResult> {
  const { python, script, io } = options;
  const args = [script, "--config", JSON.stringify(options.config), "--workloads", JSON.stringify(options.workloads)];
  if (options.modelDir !== undefined) args.push("--model", options.modelDir);
  if (options.precision === "bf16") args.push("--bf16");
  const { code, stdout, stderr } = await runChild(python, args, io);
  if (code !== 0) return { failed: `${python} ${path.basename(script)} exited with ${code}: ${tail(stderr)}` };
  try {
    return { ...(JSON.parse(lastLine(stdout)) as TorchResult), python } as TorchResult;
  } catch {
    return { failed: `${path.basename(script)} printed no JSON result: ${tail(stdout)}` };
  }
}

/** The PyTorch columns of a run: results.pytorch (float32) and results.pytorch_bf16 (bf16 autocast). */
export type TorchColumns = Partial<Record<"pytorch" | "pytorch_bf16", TorchResult>>;

/**
 * Runs torch_bench.py once per precision, each in its own Python process (so each column has
 * its own peak RSS and load time); a missing script or Python skips every column with the reason.
 */
export async function runTorchColumns(options: {
  python: string | undefined;
  config: Record<string, unknown>;
  modelDir: string | undefined;
  precisions: readonly TorchPrecision[];
  workloads: Workloads;
  io: CliIO;
}): Promise<TorchColumns> {
  const { io } = options;
  const columns: TorchColumns = {};
  const skipAll = (why: TorchResult): TorchColumns => Object.fromEntries(options.precisions.map((p) => [torchColumn(p), why]));
  const root = findRepoRoot();
  // Beside the code, as installed; in the checkout for a CLI compiled elsewhere (the CLI's tests).
  const script = [TORCH_BENCH_SCRIPT, ...(root !== undefined ? [path.join(root, "apps", "cli", "assets", "bench", "torch_bench.py")] : [])].find((f) =>
    existsSync(f),
  );
  if (script === undefined) return skipAll({ skipped: `${TORCH_BENCH_SCRIPT} not found: reinstall pbrl` });
  const found = findTorchPython(options.python, root);
  if ("skipped" in found) return skipAll(found);
  for (const precision of options.precisions) {
    io.err(
      `pbrl bench [${precision === "bf16" ? "pytorch bf16" : "pytorch"}]: ${found.python} ${root !== undefined ? path.relative(root, script) : script}${precision === "bf16" ? " --bf16" : ""}\n`,
    );
    columns[torchColumn(precision)] = await runTorchBench({
      python: found.python,
      script,
      config: options.config,
      modelDir: options.modelDir,
      precision,
      workloads: options.workloads,
      io,
    });
  }
  return columns;
}

export function torchColumn(precision: TorchPrecision): "pytorch" | "pytorch_bf16" {
  return precision === "bf16" ? "pytorch_bf16" : "pytorch";
}

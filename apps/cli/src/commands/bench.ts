import { existsSync } from "node:fs";
import * as path from "node:path";
import { BACKEND_NAMES, currentBackend, libtorchAddonPath, loadNativeAddon, useBackend, type BackendName, type ComputePrecision } from "@pbrl/core-tensor";
import { isPosInt, optNumber, parseFlags } from "../args.js";
import { compiledCliEntry, lastLine, runChild, tail } from "../bench/child.js";
import { FLAT_RSS_MB_PER_ROUND } from "../bench/demo-rounds.js";
import { loadAverage, machineInfo } from "../bench/machine.js";
import { parameterCount, PRESETS, REAL_SIZE_PRESETS, sourceConfig, sourceConfigJson, type ModelSource, type Preset } from "../bench/presets.js";
import { computeRatios, isMeasured, type Outcome, type PbrlOutcome } from "../bench/ratios.js";
import { formatTable, type BenchReport } from "../bench/report.js";
import { runTorchColumns, type TorchMeasured } from "../bench/torch.js";
import { runBenchWorker, type WorkerResult, type WorkerSpec } from "../bench/worker.js";
import { DEFAULT_STEPS, REAL_SIZE_PARAMETERS, workloadsFor, type Scale, type WorkloadFlags, type Workloads } from "../bench/workloads.js";
import { UsageError, type CliIO } from "../io.js";

/** Flatness compares RSS from round 2 to the last, so it needs two rounds after the first. */
const MIN_ROUNDS = 3;
const PRECISIONS: readonly ComputePrecision[] = ["float32", "bf16"];

export const BENCH_HELP = `pbrl bench [options]

Measures training and generation speed, load time and memory of a model on each tensor backend,
and of the same model in PyTorch + transformers when available (float32 and bf16 autocast, run
first, right before the first backend, so the compared training steps run close together);
then, for the small presets, times one round of the embedded demo on each backend.

  --preset P       default (vocab 8000, hidden 256, 6 layers, 4 heads, intermediate 688,
                   untied embeddings, ≈8.8M parameters), tiny (a seconds-long smoke test), or a
                   real checkpoint's shape, randomly initialised on both sides: smollm2-135m
                   (HuggingFaceTB/SmolLM2-135M, 134.5M parameters) or qwen2.5-0.5b
                   (Qwen/Qwen2.5-0.5B, 494M parameters)
  --model DIR      a Hugging Face checkpoint folder (config.json and safetensors weights),
                   loaded by pbrl and by transformers, instead of a preset
  --backends LIST  comma-separated pbrl backends, each run in its own process (default
                   native,wasm,cpu; at real sizes libtorch,native,wasm; native and libtorch are
                   reported as skipped, with the reason, when their addon is not built)
  --precision P    float32 or bf16: only that precision's columns (default both: libtorch runs
                   pbrl_libtorch and pbrl_libtorch_bf16, PyTorch pytorch and pytorch_bf16; the
                   other backends compute in float32 only)
  --steps N        timed training steps after the warm-up (default ${DEFAULT_STEPS})
  --train_batch N  training sequences per step (default 8; at real sizes 4 below 300M
                   parameters, else 2)
  --train_seq N    tokens per training sequence (default 128)
  --uncached       also time generation without the KV cache at real sizes (minutes)
  --lora           after the full training steps, the same steps training a LoRA adapter (r 16,
                   alpha 32, dropout 0.05, every linear layer; PEFT on the PyTorch side):
                   lora_train_tokens_per_s, and <column>_lora_vs_pytorch_best in ratios
  --gradient_checkpointing
                   the full training steps once more recomputing each layer in the backward
                   pass: ckpt_train_tokens_per_s and ckpt_train_activation_peak_mb beside
                   train_activation_peak_mb, which both include the step's weight gradients
                   (train_gradients_mb) (pbrl only)
  --python PATH    Python with torch and transformers (default: $PBRL_PYTHON, then
                   <repo>/.venv-ref/bin/python, then python3); runs assets/bench/torch_bench.py
  --no-torch       skip the PyTorch comparison
  --no-demo-round  skip timing one round of the embedded demo
  --rounds N       also run N ≥ ${MIN_ROUNDS} small demo rounds per backend (20 to judge memory) and
                   record live tensors, tf memory and RSS after each: "flat" when tensors and
                   tf memory end as they were after round 1 and RSS (after a full GC) grows
                   by less than ${FLAT_RSS_MB_PER_ROUND} MB per round from round 2 to the last (least-squares
                   slope; off by default)
  --json           print one JSON object (model, machine, workloads, results, ratios) instead
                   of a table

Workloads, small sizes (default, tiny, checkpoints under ${REAL_SIZE_PARAMETERS / 1e6}M parameters): two warm-up
and --steps timed training steps (forward, backward, AdamW) on batch 8 × 128 random tokens;
sampling 16-token random prompts to 64 new tokens at batch 1 and 8, with and without KV cache.
The cpu backend (pure JS, ~30× slower) times one training step and generates 16 new tokens.
Real sizes (smollm2-135m, qwen2.5-0.5b, larger checkpoints): one warm-up and --steps timed
steps on batch 4 × 128 (2 × 128 from 300M parameters), generation with the KV cache only; the
wasm and native backends report "not measured" with the memory error when their 4 GB heap
cannot hold a training step, and cpu is skipped (hours).

Then, small presets only, one round of \`pbrl demo\` (iterative MADPO on the embedded task:
collection against the history comparator, then MADPO training, no evaluation): with --preset
default the demo's own round (64 texts × 8 candidates, 2 epochs, about 12 s on native, 100 s
on wasm), with --preset tiny, on cpu and for --rounds a small one (8 texts × 4 candidates, 1
epoch: about 1 s on native, 7 s on wasm, 3 minutes on cpu, so --rounds 20 is meant for
--backends native,wasm). PyTorch has no demo and is not timed on it. Between the two,
parallel_training: two agents of the preset model sample 8 prompts × 8 candidates (32 new
tokens) and then take --steps MADPO updates (8 pairs, 16 prompt + 48 completion tokens), in this
thread and then in one worker thread per agent, from the same weights and streams (skipped on
cpu with the default preset); on libtorch, parallel_training.ddp then runs that demo round's
settings for two rounds as \`pbrl train\` three ways: one process with every core, mp, and 2 ranks
(--nproc_per_node 2, parallel_training=ddp) with half the cores each, and times round 2 of each
(from the built CLI only). The demo round and parallel_training run in the float32 columns.
Progress goes to stderr. docs/libtorch-backend.md ("Bench") describes the columns and ratios.
`;

const DEFAULT_BACKENDS: Record<Scale, string> = { small: "native,wasm,cpu", real: "libtorch,native,wasm" };

function parseBackends(value: string | undefined, scale: Scale): BackendName[] {
  const names = (value ?? DEFAULT_BACKENDS[scale]).split(",").map((s) => s.trim());
  for (const n of names) {
    if (!(BACKEND_NAMES as readonly string[]).includes(n)) {
      throw new UsageError(`pbrl bench: --backends must be a comma-separated list of ${BACKEND_NAMES.join(", ")}, got ${JSON.stringify(value)}`);
    }
  }
  if (new Set(names).size !== names.length) throw new UsageError(`pbrl bench: --backends names a backend twice: ${JSON.stringify(value)}`);
  return names as BackendName[];
}

function isWorkloads(w: unknown): w is Workloads {
  if (typeof w !== "object" || w === null) return false;
  const o = w as Record<string, unknown>;
  const ints = ["train_batch", "train_seq_len", "train_steps", "train_warmup_steps", "gen_prompt_len", "gen_new_tokens"];
  return (
    ints.every((k) => typeof o[k] === "number" && (isPosInt(o[k] as number) || (k === "train_warmup_steps" && o[k] === 0))) &&
    Array.isArray(o["gen_batch_sizes"]) &&
    typeof o["gen_uncached"] === "boolean" &&
    ["gen_temperature", "lr", "weight_decay"].every((k) => typeof o[k] === "number")
  );
}

function isModelSource(m: unknown): m is ModelSource {
  if (typeof m !== "object" || m === null) return false;
  const o = m as Record<string, unknown>;
  return (PRESETS as readonly unknown[]).includes(o["preset"]) || typeof o["dir"] === "string";
}

function parseWorkerSpec(value: string): WorkerSpec {
  let spec: Partial<WorkerSpec>;
  try {
    spec = JSON.parse(value) as Partial<WorkerSpec>;
  } catch {
    throw new UsageError(`pbrl bench: --worker takes a JSON spec, got ${JSON.stringify(value)}`);
  }
  const { backend, precision, model, scale, workloads, steps, demo_round: demoRound, rounds } = spec;
  const validRounds = rounds === null || (typeof rounds === "number" && isPosInt(rounds) && rounds >= MIN_ROUNDS);
  const valid =
    (BACKEND_NAMES as readonly unknown[]).includes(backend) &&
    (PRECISIONS as readonly unknown[]).includes(precision) &&
    isModelSource(model) &&
    (scale === "small" || scale === "real") &&
    isWorkloads(workloads) &&
    typeof steps === "number" &&
    isPosInt(steps) &&
    typeof demoRound === "boolean" &&
    validRounds;
  if (!valid) throw new UsageError(`pbrl bench: invalid --worker spec ${value}`);
  return {
    backend: backend!,
    precision: precision!,
    model: model!,
    scale: scale!,
    workloads: workloads!,
    steps: steps!,
    demo_round: demoRound!,
    rounds: rounds!,
  };
}

/**
 * Where a backend's worker runs: from the built CLI a child process, `node dist/main.js bench
 * --worker SPEC`, so each backend has its own peak RSS and tfjs engine; from the TypeScript
 * sources (tests) in this process, which its `isolation` field says.
 */
async function runBackend(spec: WorkerSpec, io: CliIO): Promise<WorkerResult | { failed: string }> {
  const entry = compiledCliEntry();
  if (entry === undefined) {
    const previous = currentBackend()?.name;
    try {
      return await runBenchWorker(spec, io, "in-process");
    } catch (err) {
      return { failed: `${(err as Error).name}: ${(err as Error).message}` };
    } finally {
      if (previous !== undefined && previous !== spec.backend) await useBackend(previous);
    }
  }
  // --expose-gc: the flatness probe collects garbage before reading RSS after each demo round.
  const { code, stdout, stderr } = await runChild(process.execPath, ["--expose-gc", entry, "bench", "--worker", JSON.stringify(spec)], io);
  if (code !== 0) return { failed: `worker for backend ${spec.backend} exited with ${code}: ${tail(stderr)}` };
  try {
    return JSON.parse(lastLine(stdout)) as WorkerResult;
  } catch {
    return { failed: `worker for backend ${spec.backend} printed no JSON result: ${tail(stdout)}` };
  }
}

/** --model DIR, checked here so a wrong folder is a usage error before anything runs. */
function parseModelDir(dir: string): ModelSource {
  const abs = path.resolve(dir);
  if (!existsSync(path.join(abs, "config.json")))
    throw new UsageError(`pbrl bench: --model must be a checkpoint folder with a config.json, got ${JSON.stringify(dir)}`);
  try {
    sourceConfig({ dir: abs });
  } catch (err) {
    throw new UsageError(`pbrl bench: --model ${JSON.stringify(dir)}: ${(err as Error).message}`);
  }
  return { dir: abs };
}

/** Why a backend's addon is missing, or undefined when it can run (libtorch: checked without loading it here). */
function addonMissing(backend: BackendName): string | undefined {
  if (backend === "native") {
    const load = loadNativeAddon();
    return load.ok ? undefined : `the native backend is unavailable: ${load.reason}`;
  }
  if (backend === "libtorch") {
    if (process.env["PBRL_LIBTORCH"] === "off") return "the libtorch backend is disabled by PBRL_LIBTORCH=off";
    const addon = libtorchAddonPath();
    return existsSync(addon)
      ? undefined
      : `the libtorch backend is unavailable: its addon is not built (${addon} does not exist; docs/libtorch-backend.md says how to get it)`;
  }
  return undefined;
}

function columnKey(backend: BackendName, precision: ComputePrecision): string {
  return precision === "bf16" ? `pbrl_${backend}_bf16` : `pbrl_${backend}`;
}

export async function benchCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      json: { type: "boolean" },
      backends: { type: "string" },
      preset: { type: "string" },
      model: { type: "string" },
      precision: { type: "string" },
      python: { type: "string" },
      "no-torch": { type: "boolean" },
      "no-demo-round": { type: "boolean" },
      rounds: { type: "string" },
      steps: { type: "string" },
      train_batch: { type: "string" },
      train_seq: { type: "string" },
      uncached: { type: "boolean" },
      lora: { type: "boolean" },
      gradient_checkpointing: { type: "boolean" },
      worker: { type: "string" },
    },
    "bench",
  );
  if (values.worker !== undefined) {
    const result = await runBenchWorker(parseWorkerSpec(values.worker), io, "child process");
    io.out(`${JSON.stringify(result)}\n`);
    return 0;
  }
  if (values.preset !== undefined && values.model !== undefined)
    throw new UsageError("pbrl bench: --preset and --model cannot be combined (--model measures that checkpoint)");
  const preset = (values.preset ?? "default") as Preset;
  if (values.model === undefined && !PRESETS.includes(preset))
    throw new UsageError(`pbrl bench: --preset must be one of ${PRESETS.join(", ")}, got ${JSON.stringify(values.preset)}`);
  const source: ModelSource = values.model !== undefined ? parseModelDir(values.model) : { preset };
  const precisionFlag = values.precision;
  if (precisionFlag !== undefined && !(PRECISIONS as readonly string[]).includes(precisionFlag))
    throw new UsageError(`pbrl bench: --precision must be float32 or bf16, got ${JSON.stringify(precisionFlag)}`);
  const precisions: readonly ComputePrecision[] = precisionFlag !== undefined ? [precisionFlag as ComputePrecision] : PRECISIONS;
  const flags: WorkloadFlags = {
    steps: optNumber(values.steps, "steps", "bench", isPosInt, "a positive integer"),
    trainBatch: optNumber(values.train_batch, "train_batch", "bench", isPosInt, "a positive integer"),
    trainSeq: optNumber(
      values.train_seq,
      "train_seq",
      "bench",
      (n) => isPosInt(n) && n >= 2,
      "an integer of at least 2 (one prompt token and one scored token)",
    ),
    uncached: values.uncached === true,
    lora: values.lora === true,
    gradientCheckpointing: values.gradient_checkpointing === true,
  };
  const noTorch = values["no-torch"] === true;
  if (noTorch && values.python !== undefined) throw new UsageError("pbrl bench: --python cannot be combined with --no-torch");
  const rounds =
    optNumber(
      values.rounds,
      "rounds",
      "bench",
      (n) => isPosInt(n) && n >= MIN_ROUNDS,
      `an integer of at least ${MIN_ROUNDS} (RSS growth is measured from round 2 to the last)`,
    ) ?? null;
  const demoRound = values["no-demo-round"] !== true;

  const config = sourceConfig(source);
  const parameters = parameterCount(config);
  const scale: Scale =
    ("preset" in source && REAL_SIZE_PRESETS.includes(source.preset)) || ("dir" in source && parameters >= REAL_SIZE_PARAMETERS) ? "real" : "small";
  const backends = parseBackends(values.backends, scale);
  if (precisionFlag === "bf16" && !backends.includes("libtorch") && noTorch)
    throw new UsageError("pbrl bench: --precision bf16 needs libtorch in --backends or the PyTorch comparison (the other backends compute in float32 only)");
  const steps = flags.steps ?? DEFAULT_STEPS;

  const start = performance.now();
  const machine = machineInfo();
  const configJson = sourceConfigJson(source);
  const what = "preset" in source ? `preset ${source.preset}` : `model ${source.dir}`;
  io.err(
    `pbrl bench: ${what}, ${parameters.toLocaleString("en-US")} parameters (${scale} sizes), backends ${backends.join(", ")}, precision ${precisions.join(" and ")}, ${steps} timed training steps` +
      `${demoRound && scale === "small" ? ", one demo round" : ""}${rounds !== null ? `, ${rounds} demo rounds for flatness` : ""}\n`,
  );

  const results: Record<string, Outcome> = {};
  const workloads: Record<string, Workloads> = {};
  // PyTorch first, right before the first pbrl backend: on a shared machine whose speed drifts
  // over minutes, the training steps compared in the ratios then run seconds apart rather than
  // after every pbrl backend's demo rounds.
  const torch = noTorch
    ? undefined
    : await runTorchColumns({
        python: values.python,
        config: configJson,
        modelDir: "dir" in source ? source.dir : undefined,
        precisions,
        workloads: workloadsFor("pytorch", scale, parameters, flags),
        io,
      });
  for (const [name, r] of Object.entries(torch ?? {}))
    if (!isMeasured(r)) io.err(`pbrl bench [${name}]: ${"skipped" in r ? `skipped — ${r.skipped}` : `failed — ${r.failed}`}\n`);

  // By default native and libtorch run when their addon is built; asked for by name, they must run (and fail).
  const byName = values.backends !== undefined;
  const mustRun: string[] = [];
  for (const backend of backends) {
    const missing = byName ? undefined : addonMissing(backend);
    for (const precision of backend === "libtorch" ? precisions : ["float32" as const]) {
      const key = columnKey(backend, precision);
      const skipped =
        missing ??
        (backend !== "libtorch" && !precisions.includes("float32") ? `--precision bf16: the ${backend} backend computes in float32 only` : undefined) ??
        (backend === "cpu" && scale === "real" ? "the cpu backend's pure-JS kernels would take hours per training step at this size" : undefined);
      if (skipped !== undefined) {
        results[key] = { skipped };
        io.err(`pbrl bench [${key}]: skipped — ${skipped}\n`);
        continue;
      }
      mustRun.push(key);
      workloads[key] = workloadsFor(backend, scale, parameters, flags);
      const r = await runBackend({ backend, precision, model: source, scale, workloads: workloads[key], steps, demo_round: demoRound, rounds }, io);
      results[key] = r;
      if (isMeasured(r)) workloads[key] = r.workloads;
      else if ("failed" in r) io.err(`pbrl bench [${key}]: failed — ${r.failed}\n`);
    }
  }

  const demoTimed = demoRound && scale === "small" && "preset" in source;
  for (const name of ["pytorch", "pytorch_bf16"] as const) {
    const r = torch?.[name];
    if (r === undefined) {
      results[name] = { skipped: noTorch ? "--no-torch" : `--precision ${precisionFlag ?? ""}`.trim() };
      continue;
    }
    results[name] = isMeasured(r) ? { ...r, ...torchDemoNotMeasured(demoTimed, rounds) } : r;
    if (isMeasured(r)) workloads[name] = r.workloads;
  }

  const report: BenchReport = {
    model: { preset: "preset" in source ? source.preset : null, ...("dir" in source ? { model_dir: source.dir } : {}), ...configJson, parameters },
    machine: { ...machine, load_average_at_end: loadAverage() },
    workloads,
    results,
    ratios: computeRatios(results),
    wall_s: Math.round(((performance.now() - start) / 1000) * 10) / 10,
  };
  io.out(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report));
  // A column that could not hold the model (not_measured) is a result; a crash or error is not.
  return mustRun.every((k) => !("failed" in (results[k] as PbrlOutcome))) ? 0 : 1;
}

/** The demo runs on pbrl's trainers only: the PyTorch result says so instead of carrying a number. */
function torchDemoNotMeasured(demoRound: boolean, rounds: number | null): Pick<TorchMeasured, "demo_round" | "flatness"> {
  const why = "PyTorch has no implementation of the demo's iterative MADPO, so it is not measured";
  return { ...(demoRound ? { demo_round: { not_measured: why } } : {}), ...(rounds !== null ? { flatness: { not_measured: why } } : {}) };
}

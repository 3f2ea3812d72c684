import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { BACKEND_NAMES, currentBackend, loadNativeAddon, useBackend, type BackendName } from "@pbrl/core-tensor";
import { parameterSpecs, parseModelConfig } from "@pbrl/models";
import { isPosInt, optNumber, parseFlags } from "../args.js";
import { lastLine, runChild, tail } from "../bench/child.js";
import { FLAT_RSS_MB_PER_ROUND } from "../bench/demo-rounds.js";
import { computeRatios, formatTable, isMeasured, loadAverage, machineInfo, type BenchReport, type Outcome, type PbrlOutcome } from "../bench/report.js";
import { findRepoRoot, findTorchPython, runTorchBench, type TorchMeasured, type TorchResult } from "../bench/torch.js";
import { runBenchWorker, type BackendResult, type WorkerSpec } from "../bench/worker.js";
import { PRESETS, presetConfigJson, workloadsFor, type Preset, type Workloads } from "../bench/workloads.js";
import { UsageError, type CliIO } from "../io.js";

const DEFAULT_STEPS = 3;
/** Flatness compares RSS from round 2 to the last, so it needs two rounds after the first. */
const MIN_ROUNDS = 3;

export const BENCH_HELP = `pbrl bench [options]

Measures training and generation speed and memory of a randomly initialised Llama-style model
on each tensor backend, and of the same model in PyTorch + transformers when available (run
first, right before the first backend, so the compared training steps run close together); then
times one round of the embedded demo on each backend.

  --preset P       default (vocab 8000, hidden 256, 6 layers, 4 heads, intermediate 688,
                   untied embeddings, ≈8.8M parameters) or tiny (a seconds-long smoke test)
  --backends LIST  comma-separated pbrl backends, each run in its own process (default
                   native,wasm,cpu; native is reported as skipped, with the reason, when its
                   addon is not built)
  --steps N        timed training steps after one warm-up step (default ${DEFAULT_STEPS})
  --python PATH    Python with torch and transformers (default: $PBRL_PYTHON, then
                   <repo>/.venv-ref/bin/python, then python3); runs scripts/bench/torch_bench.py
  --no-torch       skip the PyTorch comparison
  --no-demo-round  skip timing one round of the embedded demo
  --rounds N       also run N ≥ ${MIN_ROUNDS} small demo rounds per backend (20 to judge memory) and
                   record live tensors, tf memory and RSS after each: "flat" when tensors and
                   tf memory end as they were after round 1 and RSS (after a full GC) grows
                   by less than ${FLAT_RSS_MB_PER_ROUND} MB per round from round 2 to the last (least-squares
                   slope; off by default)
  --json           print one JSON object (results, pbrl/pytorch ratios) instead of a table

Workloads: training steps (forward, backward, AdamW) on batch 8 × 128 random tokens; sampling
16-token random prompts to 64 new tokens at batch 1 and 8, with and without KV cache. The cpu
backend (pure JS, ~30× slower) runs batch 1 × 32 and 16 new tokens. Then one round of
\`pbrl demo\` (iterative MADPO on the embedded task: collection against the history comparator,
then MADPO training, no evaluation): with --preset default the demo's own round (64 texts × 8
candidates, 2 epochs, about 12 s on native, 100 s on wasm), with --preset tiny, on cpu and for
--rounds a small one (8 texts × 4 candidates, 1 epoch: about 1 s on native, 7 s on wasm, 3
minutes on cpu, so --rounds 20 is meant for --backends native,wasm). PyTorch has no demo and is not timed
on it. Between the two, parallel_training: two agents of the preset model sample 8 prompts × 8
candidates (32 new tokens) and then take --steps MADPO updates (8 pairs, 16 prompt + 48
completion tokens), in this thread and then in one worker thread per agent, from the same
weights and streams (skipped on cpu with the default preset). Progress goes to stderr.
`;

const DEFAULT_BACKENDS = "native,wasm,cpu";

function parseBackends(value: string | undefined): BackendName[] {
  const names = (value ?? DEFAULT_BACKENDS).split(",").map((s) => s.trim());
  for (const n of names) {
    if (!(BACKEND_NAMES as readonly string[]).includes(n)) {
      throw new UsageError(`pbrl bench: --backends must be a comma-separated list of ${BACKEND_NAMES.join(", ")}, got ${JSON.stringify(value)}`);
    }
  }
  if (new Set(names).size !== names.length) throw new UsageError(`pbrl bench: --backends names a backend twice: ${JSON.stringify(value)}`);
  return names as BackendName[];
}

function parseWorkerSpec(value: string): WorkerSpec {
  let spec: Partial<WorkerSpec>;
  try {
    spec = JSON.parse(value) as Partial<WorkerSpec>;
  } catch {
    throw new UsageError(`pbrl bench: --worker takes a JSON spec, got ${JSON.stringify(value)}`);
  }
  const { backend, preset, steps, demo_round: demoRound, rounds } = spec;
  const validRounds = rounds === null || (typeof rounds === "number" && isPosInt(rounds) && rounds >= MIN_ROUNDS);
  if (!(BACKEND_NAMES as readonly unknown[]).includes(backend) || !(PRESETS as readonly unknown[]).includes(preset) || !(typeof steps === "number" && isPosInt(steps)) || typeof demoRound !== "boolean" || !validRounds) {
    throw new UsageError(`pbrl bench: invalid --worker spec ${value}`);
  }
  return { backend: backend!, preset: preset!, steps, demo_round: demoRound, rounds: rounds! };
}

/**
 * Where a backend's worker runs. From the built CLI (dist/*.js) it is a child process,
 * `node dist/main.js bench --worker SPEC`, so each backend has its own peak RSS and tfjs engine.
 * From the TypeScript sources (vitest imports src/ directly) there is no JavaScript entry that
 * matches the code being tested — Node cannot run src/main.ts, and dist/ may be stale — so the
 * worker runs in this process, and says so in its `isolation` field.
 */
function workerEntry(): string | undefined {
  const self = fileURLToPath(import.meta.url);
  if (!self.endsWith(".js")) return undefined;
  const entry = path.join(path.dirname(self), "..", "main.js");
  return existsSync(entry) ? entry : undefined;
}

async function runBackend(spec: WorkerSpec, io: CliIO): Promise<Exclude<PbrlOutcome, { skipped: string }>> {
  const entry = workerEntry();
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
    return JSON.parse(lastLine(stdout)) as BackendResult;
  } catch {
    return { failed: `worker for backend ${spec.backend} printed no JSON result: ${tail(stdout)}` };
  }
}

export async function benchCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      json: { type: "boolean" },
      backends: { type: "string" },
      preset: { type: "string" },
      python: { type: "string" },
      "no-torch": { type: "boolean" },
      "no-demo-round": { type: "boolean" },
      rounds: { type: "string" },
      steps: { type: "string" },
      worker: { type: "string" },
    },
    "bench",
  );
  if (values.worker !== undefined) {
    const result = await runBenchWorker(parseWorkerSpec(values.worker), io, "child process");
    io.out(`${JSON.stringify(result)}\n`);
    return 0;
  }
  const preset = (values.preset ?? "default") as Preset;
  if (!PRESETS.includes(preset)) throw new UsageError(`pbrl bench: --preset must be one of ${PRESETS.join(", ")}, got ${JSON.stringify(values.preset)}`);
  const backends = parseBackends(values.backends);
  const steps = optNumber(values.steps, "steps", "bench", isPosInt, "a positive integer") ?? DEFAULT_STEPS;
  const noTorch = values["no-torch"] === true;
  if (noTorch && values.python !== undefined) throw new UsageError("pbrl bench: --python cannot be combined with --no-torch");
  const rounds = optNumber(values.rounds, "rounds", "bench", (n) => isPosInt(n) && n >= MIN_ROUNDS, `an integer of at least ${MIN_ROUNDS} (RSS growth is measured from round 2 to the last)`) ?? null;
  const demoRound = values["no-demo-round"] !== true;

  const start = performance.now();
  const machine = machineInfo();
  const configJson = presetConfigJson(preset);
  const parameters = parameterSpecs(parseModelConfig(configJson)).reduce((a, s) => a + s.shape.reduce((x, y) => x * y, 1), 0);
  io.err(
    `pbrl bench: preset ${preset}, ${parameters.toLocaleString("en-US")} parameters, backends ${backends.join(", ")}, ${steps} timed training steps` +
      `${demoRound ? ", one demo round" : ""}${rounds !== null ? `, ${rounds} demo rounds for flatness` : ""}\n`,
  );

  const results: Record<string, Outcome> = {};
  const workloads: Record<string, Workloads> = {};
  // PyTorch first, right before the first pbrl backend: on a shared machine whose speed drifts
  // over minutes, the training steps compared in the ratios then run seconds apart rather than
  // after every pbrl backend's demo rounds.
  const torch = noTorch ? undefined : await torchSide(values.python, configJson, steps, io);
  if (torch !== undefined && !isMeasured(torch)) io.err(`pbrl bench [pytorch]: ${"skipped" in torch ? `skipped — ${torch.skipped}` : `failed — ${torch.failed}`}\n`);
  // By default native runs when its addon is built; asked for by name, it must run (and fails).
  const nativeLoad = loadNativeAddon();
  const optional = new Set<BackendName>(values.backends === undefined && !nativeLoad.ok ? ["native"] : []);
  for (const backend of backends) {
    const key = `pbrl_${backend}`;
    if (optional.has(backend) && !nativeLoad.ok) {
      results[key] = { skipped: `the native backend is unavailable: ${nativeLoad.reason}` };
      io.err(`pbrl bench [${backend}]: skipped — ${nativeLoad.reason}\n`);
      continue;
    }
    workloads[key] = workloadsFor(backend, steps);
    const r = await runBackend({ backend, preset, steps, demo_round: demoRound, rounds }, io);
    results[key] = r;
    if (isMeasured(r)) workloads[key] = r.workloads;
    else io.err(`pbrl bench [${backend}]: failed — ${r.failed}\n`);
  }

  if (torch !== undefined) {
    results["pytorch"] = isMeasured(torch) ? { ...torch, ...torchDemoNotMeasured(demoRound, rounds) } : torch;
    if (isMeasured(torch)) workloads["pytorch"] = torch.workloads;
  } else {
    results["pytorch"] = { skipped: "--no-torch" };
  }

  const report: BenchReport = {
    model: { preset, ...configJson, parameters },
    machine: { ...machine, load_average_at_end: loadAverage() },
    workloads,
    results,
    ratios: computeRatios(results),
    wall_s: Math.round(((performance.now() - start) / 1000) * 10) / 10,
  };
  io.out(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report));
  return backends.every((b) => optional.has(b) || isMeasured(results[`pbrl_${b}`])) ? 0 : 1;
}

/** The demo runs on pbrl's trainers only: the PyTorch result says so instead of carrying a number. */
function torchDemoNotMeasured(demoRound: boolean, rounds: number | null): Pick<TorchMeasured, "demo_round" | "flatness"> {
  const why = "PyTorch has no implementation of the demo's iterative MADPO, so it is not measured";
  return { ...(demoRound ? { demo_round: { not_measured: why } } : {}), ...(rounds !== null ? { flatness: { not_measured: why } } : {}) };
}

async function torchSide(python: string | undefined, config: Record<string, unknown>, steps: number, io: CliIO): Promise<TorchResult> {
  const root = findRepoRoot();
  const script = root !== undefined ? path.join(root, "scripts", "bench", "torch_bench.py") : undefined;
  if (script === undefined || !existsSync(script)) {
    return { skipped: "scripts/bench/torch_bench.py not found: the PyTorch comparison runs from a pbrl source checkout" };
  }
  const found = findTorchPython(python, root);
  if ("skipped" in found) return found;
  io.err(`pbrl bench [pytorch]: ${found.python} ${path.relative(root!, script)}\n`);
  return runTorchBench({ python: found.python, script, config, workloads: workloadsFor("pytorch", steps), io });
}

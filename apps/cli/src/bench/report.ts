/** Ratios between pbrl and PyTorch, and the human-readable table of `pbrl bench`. */
import * as os from "node:os";
import { FLATNESS_MEANING, type DemoRoundResult, type FlatnessResult } from "./demo-rounds.js";
import type { ParallelResult } from "./parallel-agents.js";
import type { TorchResult } from "./torch.js";
import type { BackendResult } from "./worker.js";
import { RATE_METRICS, type RateMetric, type Workloads } from "./workloads.js";

export type PbrlOutcome = BackendResult | { failed: string } | { skipped: string };
export type Outcome = PbrlOutcome | TorchResult;

export interface BenchReport {
  model: Record<string, unknown> & { preset: string; parameters: number };
  machine: {
    cpus: number;
    cpu_model: string;
    total_memory_gb: number;
    node_version: string;
    platform: string;
    arch: string;
    /** os.loadavg() (1, 5, 15 min) when the bench started: other work on the machine skews the rates. */
    load_average_at_start: number[];
    load_average_at_end?: number[];
  };
  /** Sizes each result ran with (the cpu backend generates fewer tokens). */
  workloads: Record<string, Workloads>;
  results: Record<string, Outcome>;
  ratios: Record<string, Ratios>;
  wall_s: number;
}

export type Ratios = Record<RateMetric | "peak_rss_mb", number> & {
  /** native/wasm only, when both timed the same demo round: wasm seconds ÷ native seconds. */
  demo_round_s?: number;
  same_workloads: boolean;
  meaning: string;
};

export const RATIO_MEANING =
  "pbrl ÷ pytorch of the same metric: for *_tokens_per_s > 1 means pbrl is faster; for peak_rss_mb < 1 means pbrl uses less memory";

export function machineInfo(): BenchReport["machine"] {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpu_model: cpus[0]?.model.trim() ?? "unknown",
    total_memory_gb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node_version: process.version,
    platform: process.platform,
    arch: process.arch,
    load_average_at_start: loadAverage(),
  };
}

export function isMeasured<T extends Outcome>(o: T | undefined): o is Exclude<T, { failed: string } | { skipped: string }> {
  return o !== undefined && !("failed" in o) && !("skipped" in o);
}

export const NATIVE_VS_WASM_MEANING =
  "pbrl native ÷ pbrl wasm of the same metric: the speed-up of the native backend over the wasm-only path (for peak_rss_mb < 1 means native uses less memory); " +
  "demo_round_s is inverted, wasm seconds ÷ native seconds (for seconds lower is better), so it too is the speed-up: > 1 means native runs the demo round faster";

type Rated = { workloads: Workloads; peak_rss_mb: number } & Record<RateMetric, number>;

function ratiosOf(p: Rated, q: Rated, meaning: string): Ratios {
  const ratios = {} as Record<RateMetric | "peak_rss_mb", number>;
  for (const m of RATE_METRICS) ratios[m] = round(p[m] / q[m], 4);
  ratios.peak_rss_mb = round(p.peak_rss_mb / q.peak_rss_mb, 4);
  return { ...ratios, same_workloads: JSON.stringify(p.workloads) === JSON.stringify(q.workloads), meaning };
}

/**
 * pbrl/pytorch for every rate and for peak RSS, per pbrl result that ran; and native/wasm when
 * both ran, the speed-up the native backend brings over the wasm-only path.
 */
export function computeRatios(results: Record<string, Outcome>): Record<string, Ratios> {
  const torch = results["pytorch"] as TorchResult | undefined;
  const out: Record<string, Ratios> = {};
  if (isMeasured(torch)) {
    for (const [name, r] of Object.entries(results)) {
      if (name === "pytorch" || !isMeasured(r)) continue;
      out[`${name}_vs_pytorch`] = ratiosOf(r as BackendResult, torch, RATIO_MEANING);
    }
  }
  const native = results["pbrl_native"];
  const wasm = results["pbrl_wasm"];
  if (isMeasured(native) && isMeasured(wasm)) {
    const n = native as BackendResult;
    const w = wasm as BackendResult;
    const speedup = demoRoundSpeedup(n.demo_round, w.demo_round);
    const { same_workloads: same, meaning, ...rates } = ratiosOf(n, w, NATIVE_VS_WASM_MEANING);
    out["pbrl_native_vs_pbrl_wasm"] = { ...rates, ...(speedup !== undefined ? { demo_round_s: speedup } : {}), same_workloads: same, meaning };
  }
  return out;
}

/** wasm seconds ÷ native seconds of the demo round, when both timed the same one. */
function demoRoundSpeedup(native: BackendResult["demo_round"], wasm: BackendResult["demo_round"]): number | undefined {
  if ("skipped" in native || "skipped" in wasm || JSON.stringify(native.workload) !== JSON.stringify(wasm.workload)) return undefined;
  return round(wasm.demo_round_s / native.demo_round_s, 4);
}

export function loadAverage(): number[] {
  return os.loadavg().map((x) => round(x, 2));
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return "–";
  if (Math.abs(x) >= 100) return Math.round(x).toLocaleString("en-US");
  return x.toPrecision(3);
}

/** The report as a plain-text table: one column per result, then one per pbrl/pytorch ratio. */
export function formatTable(report: BenchReport): string {
  const m = report.model;
  const names = Object.keys(report.results);
  const ratioNames = Object.keys(report.ratios);
  const get = (name: string): Record<string, unknown> => report.results[name] as Record<string, unknown>;
  const num = (name: string, key: string): number | undefined => {
    const v = get(name)[key];
    return typeof v === "number" ? v : undefined;
  };
  const wl = (name: string): Workloads | undefined => report.workloads[name];
  const demo = (name: string): DemoRoundResult | undefined => {
    const d = get(name)["demo_round"] as BackendResult["demo_round"] | undefined;
    return d !== undefined && "demo_round_s" in d ? d : undefined;
  };
  const parallel = (name: string): ParallelResult | undefined => {
    const p = get(name)["parallel_training"] as BackendResult["parallel_training"] | undefined;
    return p !== undefined && "update" in p ? p : undefined;
  };
  const flat = (name: string): FlatnessResult | undefined => {
    const f = get(name)["flatness"] as FlatnessResult | { not_measured: string } | undefined;
    return f !== undefined && "summary" in f ? f : undefined;
  };
  const rows: [string, (name: string) => string, ((r: Ratios) => string) | undefined][] = [
    ["train batch × seq_len", (n) => (wl(n) ? `${wl(n)!.train_batch}×${wl(n)!.train_seq_len}` : "–"), undefined],
    ["train tokens/s", (n) => fmt(num(n, "train_tokens_per_s")), (r) => fmt(r.train_tokens_per_s)],
    ["train step s (mean)", (n) => fmt(num(n, "train_step_s_mean")), undefined],
    ["process CPU s / wall s", (n) => `${fmt(num(n, "cpu_s"))} / ${fmt(num(n, "wall_s"))}`, undefined],
    ["gen prompt + new tokens", (n) => (wl(n) ? `${wl(n)!.gen_prompt_len}+${wl(n)!.gen_new_tokens}` : "–"), undefined],
    ...RATE_METRICS.filter((k) => k.startsWith("gen_")).map(
      (k) => [`${k.replace(/^gen_b(\d+)_(\w+?)_tokens_per_s$/, "gen batch $1, $2, tokens/s")}`, (n: string) => fmt(num(n, k)), (r: Ratios) => fmt(r[k])] as [string, (n: string) => string, (r: Ratios) => string],
    ),
    ["peak RSS MB", (n) => fmt(num(n, "peak_rss_mb")), (r) => fmt(r.peak_rss_mb)],
    ["peak RSS MB after training", (n) => fmt(num(n, "peak_rss_mb_after_train")), undefined],
    ["tf memory MB (with AdamW)", (n) => fmt(num(n, "tf_memory_mb_with_optimizer")), undefined],
    ["tf memory MB (after)", (n) => fmt(num(n, "tf_memory_mb_after")), undefined],
    ["live tensors before → after", (n) => (num(n, "live_tensors_before") !== undefined ? `${num(n, "live_tensors_before")} → ${num(n, "live_tensors_after")}` : "–"), undefined],
    ["2 agents sampling s, this thread → mp", (n) => (parallel(n) ? `${fmt(parallel(n)!.generation.sequential_s)} → ${fmt(parallel(n)!.generation.mp_s)}` : "–"), undefined],
    ["2 agents MADPO update s, this thread → mp", (n) => (parallel(n) ? `${fmt(parallel(n)!.update.sequential_s)} → ${fmt(parallel(n)!.update.mp_s)}` : "–"), undefined],
    ["demo round s", (n) => fmt(demo(n)?.demo_round_s), (r) => fmt(r.demo_round_s)],
    ["demo round pairs / updates", (n) => (demo(n) ? `${demo(n)!.pairs} / ${demo(n)!.updates}` : "–"), undefined],
  ];
  if (names.some((n) => flat(n) !== undefined)) {
    rows.push(
      ["live tensors round 1 → last", (n) => (flat(n) ? `${flat(n)!.summary.live_tensors_first} → ${flat(n)!.summary.live_tensors_last}` : "–"), undefined],
      ["RSS MB per round (slope 2 → last)", (n) => (flat(n) ? flat(n)!.summary.rss_slope_mb_per_round.toFixed(2) : "–"), undefined],
      ["flat over rounds", (n) => (flat(n) ? String(flat(n)!.summary.flat) : "–"), undefined],
    );
  }
  const header = ["", ...names, ...ratioNames.map((r) => r.replace(/_vs_/, "/"))];
  const body = rows.map(([label, cell, ratio]) => [label, ...names.map((n) => (isMeasured(report.results[n]) ? cell(n) : "–")), ...ratioNames.map((r) => (ratio ? ratio(report.ratios[r]!) : ""))]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ").trimEnd();

  const mc = report.machine;
  const out = [
    `pbrl bench — preset ${m.preset}: ${m["model_type"]}, vocab ${m["vocab_size"]}, hidden ${m["hidden_size"]}, ${m["num_hidden_layers"]} layers, ` +
      `${m["num_attention_heads"]} heads (${m["num_key_value_heads"]} kv), intermediate ${m["intermediate_size"]}, ` +
      `${m["tie_word_embeddings"] === true ? "tied" : "untied"} embeddings; ${m.parameters.toLocaleString("en-US")} parameters`,
    `machine: ${mc.cpus} × ${mc.cpu_model}, ${mc.total_memory_gb} GB, node ${mc.node_version}, ${mc.platform} ${mc.arch}, load average ${mc.load_average_at_start.join(" ")} at start${mc.load_average_at_end ? `, ${mc.load_average_at_end.join(" ")} at end` : ""}`,
    "",
    line(header),
    ...body.map(line),
    "",
  ];
  for (const n of names) {
    const r = report.results[n] as Record<string, unknown>;
    if ("skipped" in r) out.push(`${n}: skipped — ${String(r["skipped"])}`);
    else if ("failed" in r) out.push(`${n}: FAILED — ${String(r["failed"])}`);
    else if (n === "pytorch") out.push(`pytorch: torch ${String(r["torch_version"])}, transformers ${String(r["transformers_version"])}, ${String(r["threads"])} threads, attention ${String(r["attn_implementation"])}`);
    else out.push(`${n}: ${String(r["description"])}, ${String(r["isolation"])}`);
  }
  if (names.some((n) => flat(n) !== undefined)) out.push(`flatness: ${FLATNESS_MEANING}`);
  if (ratioNames.includes("pbrl_native_vs_pbrl_wasm")) out.push(`pbrl_native/pbrl_wasm: ${NATIVE_VS_WASM_MEANING}`);
  if (ratioNames.some((r) => r.endsWith("_vs_pytorch"))) out.push(`ratios: ${RATIO_MEANING}${Object.values(report.ratios).some((r) => !r.same_workloads) ? " (pbrl_cpu generated fewer tokens and timed one training step)" : ""}`);
  out.push(`total wall time: ${report.wall_s.toFixed(1)} s`, "");
  return out.join("\n");
}

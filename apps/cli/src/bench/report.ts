/** The report of `pbrl bench` and its human-readable table. */
import { FLATNESS_MEANING, type DemoRoundResult, type FlatnessResult } from "./demo-rounds.js";
import { describeCpuFlags, type MachineInfo } from "./machine.js";
import type { DdpRoundResult } from "./ddp-round.js";
import type { ParallelResult } from "./parallel-agents.js";
import { BEST_MEANING, isMeasured, NATIVE_VS_WASM_MEANING, RATIO_MEANING, type Outcome, type Ratios } from "./ratios.js";
import type { BackendResult } from "./worker.js";
import { BF16_WEIGHTS_METRICS, RATE_METRICS, type Workloads } from "./workloads.js";

export interface BenchReport {
  /**
   * The model's config.json fields, with `preset` (null for --model), `model_dir` (--model only)
   * and its parameter count.
   */
  model: Record<string, unknown> & { preset: string | null; model_dir?: string; parameters: number };
  machine: MachineInfo;
  /** Sizes each result ran with (the cpu backend generates fewer tokens). */
  workloads: Record<string, Workloads>;
  /**
   * One column per pbrl backend and precision (pbrl_<backend>, pbrl_libtorch_bf16) and per
   * PyTorch precision (pytorch, pytorch_bf16): measured, or skipped, failed or not_measured with why.
   */
  results: Record<string, Outcome>;
  ratios: Record<string, Ratios>;
  wall_s: number;
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
  const ddp = (name: string): DdpRoundResult | undefined => {
    const p = get(name)["parallel_training"] as BackendResult["parallel_training"] | undefined;
    return p !== undefined && "ddp" in p && "round_s" in p.ddp ? p.ddp : undefined;
  };
  const flat = (name: string): FlatnessResult | undefined => {
    const f = get(name)["flatness"] as FlatnessResult | { not_measured: string } | undefined;
    return f !== undefined && "summary" in f ? f : undefined;
  };
  const rows: [string, (name: string) => string, ((r: Ratios) => string) | undefined][] = [
    ["train batch × seq_len", (n) => (wl(n) ? `${wl(n)!.train_batch}×${wl(n)!.train_seq_len}` : "–"), undefined],
    ["train tokens/s", (n) => fmt(num(n, "train_tokens_per_s")), (r) => fmt(r.train_tokens_per_s)],
    ["train step s (mean)", (n) => fmt(num(n, "train_step_s_mean")), undefined],
    ["model load s", (n) => fmt(num(n, "load_s")), (r) => fmt(r.load_s)],
    ["process CPU s / wall s", (n) => `${fmt(num(n, "cpu_s"))} / ${fmt(num(n, "wall_s"))}`, undefined],
    ["gen prompt + new tokens", (n) => (wl(n) ? `${wl(n)!.gen_prompt_len}+${wl(n)!.gen_new_tokens}` : "–"), undefined],
    ...[...RATE_METRICS.filter((k) => k.startsWith("gen_")), ...BF16_WEIGHTS_METRICS].map(
      (k) =>
        [
          `${k.replace(/^gen_b(\d+)_(cached|uncached)(_bf16_weights)?_tokens_per_s$/, (_, b: string, mode: string, w?: string) => `gen batch ${b}, ${mode}${w ? ", bf16 weights" : ""}, tokens/s`)}`,
          (n: string) => fmt(num(n, k)),
          (r: Ratios) => fmt(r[k]),
        ] as [string, (n: string) => string, (r: Ratios) => string],
    ),
    ["peak RSS MB", (n) => fmt(num(n, "peak_rss_mb")), (r) => fmt(r.peak_rss_mb)],
    ["peak RSS MB after loading the model", (n) => fmt(num(n, "peak_rss_mb_after_load")), undefined],
    ["peak RSS MB after training", (n) => fmt(num(n, "peak_rss_mb_after_train")), undefined],
    ["tf memory MB (with AdamW)", (n) => fmt(num(n, "tf_memory_mb_with_optimizer")), undefined],
    ["tf memory MB (after)", (n) => fmt(num(n, "tf_memory_mb_after")), undefined],
    [
      "live tensors before → after",
      (n) => (num(n, "live_tensors_before") !== undefined ? `${num(n, "live_tensors_before")} → ${num(n, "live_tensors_after")}` : "–"),
      undefined,
    ],
    [
      "2 agents sampling s, this thread → mp",
      (n) => (parallel(n) ? `${fmt(parallel(n)!.generation.sequential_s)} → ${fmt(parallel(n)!.generation.mp_s)}` : "–"),
      undefined,
    ],
    [
      "2 agents MADPO update s, this thread → mp",
      (n) => (parallel(n) ? `${fmt(parallel(n)!.update.sequential_s)} → ${fmt(parallel(n)!.update.mp_s)}` : "–"),
      undefined,
    ],
    [
      "2 agents MARLHF RL update s, this thread → mp",
      (n) => (parallel(n) ? `${fmt(parallel(n)!.rl_update.sequential_s)} → ${fmt(parallel(n)!.rl_update.mp_s)}` : "–"),
      undefined,
    ],
    [
      "demo round 2 s, one process → mp → ddp",
      (n) => (ddp(n) ? `${fmt(ddp(n)!.round_s.none)} → ${fmt(ddp(n)!.round_s.mp)} → ${fmt(ddp(n)!.round_s.ddp)}` : "–"),
      undefined,
    ],
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
  // Rows nobody measured (uncached generation at real sizes, bf16 weights without a bf16 PyTorch column) are left out.
  const shown = rows.filter(([, cell]) => names.some((n) => isMeasured(report.results[n]) && cell(n) !== "–"));
  const header = ["", ...names, ...ratioNames.map((r) => r.replace(/_vs_/, "/"))];
  const body = shown.map(([label, cell, ratio]) => [
    label,
    ...names.map((n) => (isMeasured(report.results[n]) ? cell(n) : "–")),
    ...ratioNames.map((r) => (ratio ? ratio(report.ratios[r]!) : "")),
  ]);
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ")
      .trimEnd();

  const mc = report.machine;
  const out = [
    `pbrl bench — ${m.preset !== null ? `preset ${m.preset}` : `model ${m.model_dir ?? "?"}`}: ${m["model_type"]}, vocab ${m["vocab_size"]}, hidden ${m["hidden_size"]}, ${m["num_hidden_layers"]} layers, ` +
      `${m["num_attention_heads"]} heads (${m["num_key_value_heads"]} kv), intermediate ${m["intermediate_size"]}, ` +
      `${m["tie_word_embeddings"] === true ? "tied" : "untied"} embeddings; ${m.parameters.toLocaleString("en-US")} parameters`,
    `machine: ${mc.cpus} × ${mc.cpu_model}${mc.cpu_flags !== null ? ` (${describeCpuFlags(mc.cpu_flags) || "none of the listed flags"})` : ""}, ${mc.total_memory_gb} GB, node ${mc.node_version}, ${mc.platform} ${mc.arch}, load average ${mc.load_average_at_start.join(" ")} at start${mc.load_average_at_end ? `, ${mc.load_average_at_end.join(" ")} at end` : ""}`,
    "",
    line(header),
    ...body.map(line),
    "",
  ];
  for (const n of names) {
    const r = report.results[n] as Record<string, unknown>;
    if ("skipped" in r) out.push(`${n}: skipped — ${String(r["skipped"])}`);
    else if ("failed" in r) out.push(`${n}: FAILED — ${String(r["failed"])}`);
    else if ("not_measured" in r) out.push(`${n}: not measured — ${String(r["not_measured"]).split("\n")[0]}`);
    else if (n.startsWith("pytorch"))
      out.push(
        `${n}: torch ${String(r["torch_version"])}, transformers ${String(r["transformers_version"])}, ${String(r["threads"])} threads, ATen ${String(r["cpu_capability"])} kernels, attention ${String(r["attn_implementation"])}${r["precision"] === "bf16" ? ", bf16 autocast" : ""}`,
      );
    else out.push(`${n}: ${String(r["description"])}, ${String(r["isolation"])}`);
  }
  if (names.some((n) => flat(n) !== undefined)) out.push(`flatness: ${FLATNESS_MEANING}`);
  if (ratioNames.includes("pbrl_native_vs_pbrl_wasm")) out.push(`pbrl_native/pbrl_wasm: ${NATIVE_VS_WASM_MEANING}`);
  if (ratioNames.some((r) => /_vs_pytorch(_bf16)?$/.test(r)))
    out.push(
      `ratios: ${RATIO_MEANING}${Object.values(report.ratios).some((r) => !r.same_workloads) ? " (pbrl_cpu generated fewer tokens and timed one training step)" : ""}`,
    );
  if (ratioNames.some((r) => r.endsWith("_vs_pytorch_best"))) out.push(`*/pytorch_best: ${BEST_MEANING}`);
  out.push(`total wall time: ${report.wall_s.toFixed(1)} s`, "");
  return out.join("\n");
}

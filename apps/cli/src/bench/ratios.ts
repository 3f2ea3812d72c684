/** Ratios between pbrl's columns and PyTorch's, and between pbrl's native and wasm backends. */
import type { TorchResult } from "./torch.js";
import type { BackendResult, NotMeasured } from "./worker.js";
import {
  BF16_WEIGHTS_METRICS,
  RATE_METRICS,
  VARIANT_METRICS,
  type Bf16WeightsMetric,
  type RateMetric,
  type VariantMetric,
  type Workloads,
} from "./workloads.js";

export type PbrlOutcome = BackendResult | NotMeasured | { failed: string } | { skipped: string };
export type Outcome = PbrlOutcome | TorchResult;

/** The PyTorch columns, float32 and bf16 autocast. */
export const TORCH_COLUMNS = ["pytorch", "pytorch_bf16"] as const;
export type TorchColumn = (typeof TORCH_COLUMNS)[number];

type RatioMetric = RateMetric | VariantMetric | Bf16WeightsMetric | "peak_rss_mb" | "load_s";

/** A metric is absent when either side did not measure it (uncached generation at real sizes, bf16 weights on pbrl). */
export type Ratios = Partial<Record<RatioMetric, number>> & {
  /** native/wasm only, when both timed the same demo round: wasm seconds ÷ native seconds. */
  demo_round_s?: number;
  /** *_vs_pytorch_best only: the PyTorch column with the higher training rate. */
  pytorch_best?: TorchColumn;
  same_workloads: boolean;
  meaning: string;
};

export const RATIO_MEANING =
  "pbrl ÷ PyTorch of the same metric: for *_tokens_per_s > 1 means pbrl is faster; for peak_rss_mb and load_s < 1 means pbrl uses less memory, loads faster; " +
  "in *_vs_pytorch (float32), gen_b*_cached_bf16_weights_tokens_per_s is pbrl's rate with bf16 weights ÷ PyTorch's float32 rate";

export const BEST_MEANING =
  "pbrl's training rate ÷ the higher of PyTorch float32 and PyTorch bf16 autocast (pytorch_best names it): > 1 means pbrl trains faster than either";

export const NATIVE_VS_WASM_MEANING =
  "pbrl native ÷ pbrl wasm of the same metric: the speed-up of the native backend over the wasm-only path (for peak_rss_mb < 1 means native uses less memory); " +
  "demo_round_s is inverted, wasm seconds ÷ native seconds (for seconds lower is better), so it too is the speed-up: > 1 means native runs the demo round faster";

export function isMeasured<T extends Outcome>(o: T | undefined): o is Exclude<T, { failed: string } | { skipped: string } | NotMeasured> {
  return o !== undefined && !("failed" in o) && !("skipped" in o) && !("not_measured" in o);
}

type Rated = { workloads: Workloads } & Partial<Record<RatioMetric, number>>;

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The metric of `q` that `p`'s metric `m` is divided by: bf16-weights rates against float32 PyTorch's own cached rate. */
function denominator(m: RatioMetric, qIsFloat32Torch: boolean): RatioMetric {
  return qIsFloat32Torch && (BF16_WEIGHTS_METRICS as readonly string[]).includes(m) ? (m.replace("_bf16_weights", "") as RateMetric) : m;
}

function ratiosOf(p: Rated, q: Rated, meaning: string, qIsFloat32Torch = false): Ratios {
  const ratios: Partial<Record<RatioMetric, number>> = {};
  for (const m of [...RATE_METRICS, ...VARIANT_METRICS, ...BF16_WEIGHTS_METRICS, "peak_rss_mb", "load_s"] as const) {
    const a = p[m];
    const b = q[denominator(m, qIsFloat32Torch)];
    if (typeof a === "number" && typeof b === "number" && b > 0) ratios[m] = round(a / b, 4);
  }
  return { ...ratios, same_workloads: JSON.stringify(p.workloads) === JSON.stringify(q.workloads), meaning };
}

/** wasm seconds ÷ native seconds of the demo round, when both timed the same one. */
function demoRoundSpeedup(native: BackendResult["demo_round"], wasm: BackendResult["demo_round"]): number | undefined {
  if ("skipped" in native || "skipped" in wasm || JSON.stringify(native.workload) !== JSON.stringify(wasm.workload)) return undefined;
  return round(wasm.demo_round_s / native.demo_round_s, 4);
}

/**
 * For every pbrl column that ran (pbrl_<backend>, pbrl_<backend>_bf16): pbrl ÷ each PyTorch column
 * for every rate, peak RSS and load time (`<column>_vs_pytorch`, `<column>_vs_pytorch_bf16`), and
 * when both PyTorch columns ran, the training rate ÷ the better of them (`<column>_vs_pytorch_best`).
 * And native/wasm when both ran, the speed-up the native backend brings over the wasm-only path.
 */
export function computeRatios(results: Record<string, Outcome>): Record<string, Ratios> {
  const torch = TORCH_COLUMNS.flatMap((name) => {
    const r = results[name] as TorchResult | undefined;
    return isMeasured(r) ? [{ name, r }] : [];
  });
  const out: Record<string, Ratios> = {};
  for (const [name, r] of Object.entries(results)) {
    if (!name.startsWith("pbrl_") || !isMeasured(r)) continue;
    const p = r as BackendResult;
    for (const t of torch) out[`${name}_vs_${t.name}`] = ratiosOf(p, t.r, RATIO_MEANING, t.name === "pytorch");
    if (torch.length === 2) {
      const best = torch.reduce((a, b) => (b.r.train_tokens_per_s > a.r.train_tokens_per_s ? b : a));
      out[`${name}_vs_pytorch_best`] = {
        train_tokens_per_s: round(p.train_tokens_per_s / best.r.train_tokens_per_s, 4),
        pytorch_best: best.name,
        same_workloads: JSON.stringify(p.workloads) === JSON.stringify(best.r.workloads),
        meaning: BEST_MEANING,
      };
      // --lora: pbrl's LoRA rate ÷ the better PyTorch+peft rate (its own best column).
      const loraRates = torch.flatMap((t) => (typeof t.r.lora_train_tokens_per_s === "number" ? [{ name: t.name, rate: t.r.lora_train_tokens_per_s }] : []));
      if (typeof p.lora_train_tokens_per_s === "number" && loraRates.length === 2) {
        const bestLora = loraRates.reduce((a, b) => (b.rate > a.rate ? b : a));
        out[`${name}_lora_vs_pytorch_best`] = {
          lora_train_tokens_per_s: round(p.lora_train_tokens_per_s / bestLora.rate, 4),
          pytorch_best: bestLora.name,
          same_workloads: JSON.stringify(p.workloads) === JSON.stringify(torch.find((t) => t.name === bestLora.name)!.r.workloads),
          meaning:
            "pbrl's LoRA training rate ÷ the higher of PyTorch+peft float32 and bf16 autocast (pytorch_best names it): > 1 means pbrl trains the adapters faster than either",
        };
      }
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

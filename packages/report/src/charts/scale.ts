/**
 * Axis scales: "nice" tick steps (1, 2 or 5 × 10^k) and linear maps from data to pixels. Ticks
 * are rounded to the step's decimals, so floating-point noise never reaches a label.
 */
import { formatNumber } from "../format-number.js";

export interface Ticks {
  /** The axis range, widened to whole steps. */
  domain: [number, number];
  ticks: number[];
  /** Decimals a tick label needs at this step. */
  decimals: number;
}

function niceStep(raw: number): number {
  const e = Math.floor(Math.log10(raw));
  const f = raw / 10 ** e;
  const m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return m * 10 ** e;
}

/**
 * About `target` ticks covering [min, max]; `integer` keeps the step ≥ 1 (counts). A range that
 * is empty or too narrow for its magnitude is widened first (see extent).
 */
export function niceTicks(min: number, max: number, target = 5, integer = false): Ticks {
  [min, max] = extent([min, max]);
  let step = niceStep((max - min) / target);
  if (integer && step < 1) step = 1;
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const first = Math.floor(min / step + 1e-9);
  const last = Math.ceil(max / step - 1e-9);
  // Beyond what doubles resolve (ranges near ±1e308, steps below 1e-100): just the two ends.
  if (!Number.isFinite(step) || decimals > 100 || !(last - first <= 1000)) return { domain: [min, max], ticks: [min, max], decimals: 100 };
  const ticks: number[] = [];
  for (let k = first; k <= last; k++) ticks.push(Number((k * step).toFixed(decimals)) + 0);
  return { domain: [ticks[0]!, ticks[ticks.length - 1]!], ticks, decimals };
}

/** A tick's label at the tick step's precision (exponential for very large or small numbers). */
export function tickLabel(value: number, decimals: number): string {
  if (Math.abs(value) >= 1e6 || decimals > 4) return formatNumber(value);
  return value.toFixed(decimals);
}

/**
 * The range an axis shows for these values: their min and max, widened when they are all equal
 * (a single point still gets an axis around it); [0, 1] when there are none.
 */
export function extent(values: readonly number[], includeZero = false): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (lo > hi) return [0, 1];
  if (includeZero) {
    lo = Math.min(lo, 0);
    hi = Math.max(hi, 0);
  }
  // Values equal up to rounding noise (1 and 0.9999999999999999) are one value: an axis a few
  // ulps wide would need more ticks than doubles can count.
  if (hi - lo <= 1e-9 * Math.max(Math.abs(lo), Math.abs(hi))) {
    const pad = Math.abs(hi) * 0.1 || 1;
    return [lo - pad, hi + pad];
  }
  return [lo, hi];
}

/** Maps [d0, d1] onto [r0, r1]. */
export function linear(domain: readonly [number, number], range: readonly [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return (v) => r0 + (v - d0) * k;
}

/** Pixel coordinates with one decimal: enough for a screen, and the same string every time. */
export function px(v: number): string {
  return (Math.round(v * 10) / 10 + 0).toFixed(1).replace(/\.0$/, "");
}

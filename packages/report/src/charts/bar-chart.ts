/**
 * Grouped bars per category (per round: new / trained pairs, invalid candidates): one
 * <rect data-bar> per finite, non-zero value; a missing value (NaN, null) draws nothing.
 */
import { escapeHtml } from "../escape.js";
import { formatNumber } from "../format-number.js";
import { axes, legend, noData, plotBox, seriesColor, svgOpen, type SvgOptions } from "./frame.js";
import { extent, linear, niceTicks, px } from "./scale.js";

export interface BarSeries {
  name: string;
  /** One value per category; null or NaN for none. */
  values: readonly (number | null)[];
  color?: string;
}

export interface BarChartSpec extends SvgOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  categories: readonly string[];
  series: readonly BarSeries[];
}

export function barChart(spec: BarChartSpec): string {
  const width = spec.width ?? 480;
  const height = spec.height ?? 260;
  const n = spec.categories.length;
  for (const s of spec.series) {
    if (s.values.length !== n) throw new RangeError(`bar series ${JSON.stringify(s.name)} has ${s.values.length} values for ${n} categories`);
  }
  const colors = spec.series.map((s, i) => seriesColor(i, s.color));
  const lg = legend(
    spec.series.map((s, i) => ({ name: s.name, color: colors[i]!, swatch: "box" as const })),
    width,
    34,
  );
  const box = plotBox(width, height, lg.height);
  const parts = [svgOpen("bar", spec.title, width, height, spec.xmlns), lg.svg];
  const values = spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)));
  const allIntegers = values.every(Number.isInteger);
  // Bars grow from 0: the axis always holds 0, and an all-zero chart still gets a [0, 1] axis.
  const [y0, y1] = values.some((v) => v !== 0) ? extent(values, true) : [0, 1];
  const yt = niceTicks(y0, y1, Math.max(2, Math.floor((box.bottom - box.top) / 40)), allIntegers);
  const band = n === 0 ? 0 : (box.right - box.left) / n;
  // Label every k-th category so the labels never run into each other.
  const every = Math.max(1, Math.ceil((n * 24) / Math.max(1, box.right - box.left)));
  const categories = spec.categories.flatMap((label, i) => (i % every === 0 ? [{ x: box.left + band * (i + 0.5), label }] : []));
  parts.push(axes(box, { ticks: { domain: [0, 1], ticks: [], decimals: 0 }, label: spec.xLabel, categories }, { ticks: yt, label: spec.yLabel }));
  if (values.every((v) => v === 0)) {
    parts.push(noData(box, values.length === 0 ? "no data" : "all zero"), "</svg>");
    return parts.join("");
  }
  const sy = linear(yt.domain, [box.bottom, box.top]);
  const inner = band * 0.8;
  const slot = spec.series.length === 0 ? 0 : inner / spec.series.length;
  spec.series.forEach((s, si) => {
    const name = escapeHtml(s.name);
    parts.push(`<g class="series" data-series="${name}" fill="${colors[si]!}">`);
    s.values.forEach((v, ci) => {
      if (v === null || !Number.isFinite(v) || v === 0) return;
      const x = box.left + band * ci + band * 0.1 + slot * si;
      const top = Math.min(sy(v), sy(0));
      const h = Math.abs(sy(v) - sy(0));
      parts.push(
        `<rect data-bar="" x="${px(x)}" y="${px(top)}" width="${px(Math.max(0.5, slot - (slot > 3 ? 1 : 0)))}" height="${px(h)}"><title>${name}, ${escapeHtml(spec.categories[ci]!)}: ${escapeHtml(formatNumber(v))}</title></rect>`,
      );
    });
    parts.push("</g>");
  });
  parts.push("</svg>");
  return parts.join("");
}

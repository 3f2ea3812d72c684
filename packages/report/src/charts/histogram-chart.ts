/**
 * A histogram of one or more series over the same bins: bars side by side within each bin (or
 * overlaid, half transparent), one <rect data-bar> per non-empty bar.
 */
import { escapeHtml } from "../escape.js";
import { formatNumber } from "../format-number.js";
import { axes, legend, noData, plotBox, seriesColor, svgOpen, type SvgOptions } from "./frame.js";
import { extent, linear, niceTicks, px } from "./scale.js";

export interface HistogramSeries {
  name: string;
  /** One count per bin (edges.length − 1). */
  counts: readonly number[];
  color?: string;
}

export interface HistogramChartSpec extends SvgOptions {
  title: string;
  xLabel?: string;
  yLabel?: string;
  bins: { edges: readonly number[]; series: readonly HistogramSeries[] };
  /** Bars of a bin next to each other (default) or on top of each other. */
  layout?: "side-by-side" | "overlay";
}

export function histogramChart(spec: HistogramChartSpec): string {
  const width = spec.width ?? 480;
  const height = spec.height ?? 240;
  const { edges, series } = spec.bins;
  const bins = edges.length - 1;
  for (const s of series) {
    if (s.counts.length !== bins) throw new RangeError(`histogram series ${JSON.stringify(s.name)} has ${s.counts.length} counts for ${bins} bins`);
  }
  const colors = series.map((s, i) => seriesColor(i, s.color));
  const lg = legend(
    series.map((s, i) => ({ name: s.name, color: colors[i]!, swatch: "box" as const })),
    width,
    34,
  );
  const box = plotBox(width, height, lg.height);
  const parts = [svgOpen("histogram", spec.title, width, height, spec.xmlns), lg.svg];
  const maxCount = Math.max(0, ...series.flatMap((s) => s.counts.filter(Number.isFinite)));
  const xt = niceTicks(...extent([edges[0] ?? 0, edges[bins] ?? 1]), Math.max(2, Math.floor((box.right - box.left) / 70)));
  const yt = niceTicks(0, maxCount > 0 ? maxCount : 1, Math.max(2, Math.floor((box.bottom - box.top) / 40)), true);
  parts.push(axes(box, { ticks: xt, label: spec.xLabel ?? "reward" }, { ticks: yt, label: spec.yLabel ?? "count" }));
  if (bins < 1 || maxCount === 0) {
    parts.push(noData(box, bins < 1 ? "no bins" : "no samples"), "</svg>");
    return parts.join("");
  }
  const sx = linear(xt.domain, [box.left, box.right]);
  const sy = linear(yt.domain, [box.bottom, box.top]);
  const overlay = spec.layout === "overlay";
  series.forEach((s, si) => {
    const name = escapeHtml(s.name);
    parts.push(`<g class="series" data-series="${name}" fill="${colors[si]!}"${overlay ? ` fill-opacity="0.55"` : ""}>`);
    for (let b = 0; b < bins; b++) {
      const count = s.counts[b]!;
      if (!(Number.isFinite(count) && count > 0)) continue;
      const left = sx(edges[b]!);
      const right = sx(edges[b + 1]!);
      const slot = overlay ? right - left : (right - left) / series.length;
      const x = overlay ? left : left + slot * si;
      const w = Math.max(0.5, slot - (slot > 3 ? 1 : 0)); // a pixel between neighbours, when there is room
      const top = sy(count);
      const range = `[${formatNumber(edges[b]!)}, ${formatNumber(edges[b + 1]!)}${b === bins - 1 ? "]" : ")"}`;
      parts.push(
        `<rect data-bar="" x="${px(x)}" y="${px(top)}" width="${px(w)}" height="${px(box.bottom - top)}"><title>${name} ${escapeHtml(range)}: ${escapeHtml(formatNumber(count))}</title></rect>`,
      );
    }
    parts.push("</g>");
  });
  parts.push("</svg>");
  return parts.join("");
}

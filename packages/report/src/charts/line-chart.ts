/**
 * A line chart: one <path> per series and one <circle data-point> per finite point. A point
 * whose x or y is not a finite number (a NaN logged as null) is skipped and breaks the line there.
 */
import { escapeHtml } from "../escape.js";
import { formatNumber } from "../format-number.js";
import { axes, legend, noData, plotBox, seriesColor, svgOpen, type SvgOptions } from "./frame.js";
import { extent, linear, niceTicks, px } from "./scale.js";

export type Point = readonly [x: number, y: number];

export interface LineSeries {
  name: string;
  points: readonly Point[];
  /** `#rrggbb`; the palette's next colour when absent. */
  color?: string;
}

export interface LineChartSpec extends SvgOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly LineSeries[];
  /** Fixed y range (e.g. [0, 1] for accuracies and rates); data outside it widens it. */
  yRange?: readonly [number, number];
  /** x values are whole numbers (rounds, updates): ticks never fall between them. */
  integerX?: boolean;
  /** Dashed vertical lines with a label, e.g. where each round's training starts. */
  markers?: readonly { x: number; label: string }[];
}

export function lineChart(spec: LineChartSpec): string {
  const width = spec.width ?? 480;
  const height = spec.height ?? 260;
  const finite = spec.series.flatMap((s) => s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)));
  const colors = spec.series.map((s, i) => seriesColor(i, s.color));
  const lg = legend(
    spec.series.map((s, i) => ({ name: s.name, color: colors[i]!, swatch: "line" as const })),
    width,
    34,
  );
  const box = plotBox(width, height, lg.height);
  const parts = [svgOpen("line", spec.title, width, height, spec.xmlns), lg.svg];
  const [x0, x1] = extent(finite.map((p) => p[0]));
  const ys = finite.map((p) => p[1]);
  if (spec.yRange !== undefined) ys.push(spec.yRange[0], spec.yRange[1]);
  const [y0, y1] = extent(ys);
  const xt = niceTicks(x0, x1, Math.max(2, Math.floor((box.right - box.left) / 70)), spec.integerX === true);
  const yt = niceTicks(y0, y1, Math.max(2, Math.floor((box.bottom - box.top) / 40)));
  parts.push(axes(box, { ticks: xt, label: spec.xLabel }, { ticks: yt, label: spec.yLabel }));
  if (finite.length === 0) {
    parts.push(noData(box), "</svg>");
    return parts.join("");
  }
  const sx = linear(xt.domain, [box.left, box.right]);
  const sy = linear(yt.domain, [box.bottom, box.top]);
  for (const m of spec.markers ?? []) {
    if (!(m.x >= xt.domain[0] && m.x <= xt.domain[1])) continue;
    const x = px(sx(m.x));
    parts.push(
      `<g class="marker"><line x1="${x}" y1="${px(box.top)}" x2="${x}" y2="${px(box.bottom)}" stroke="#b0b0b0" stroke-dasharray="3 3"/><text x="${x}" y="${px(box.top + 10)}" dx="3" fill="#777777" font-size="10">${escapeHtml(m.label)}</text></g>`,
    );
  }
  spec.series.forEach((s, i) => {
    const color = colors[i]!;
    const name = escapeHtml(s.name);
    let d = "";
    let penDown = false;
    const circles: string[] = [];
    for (const [x, y] of s.points) {
      if (!(Number.isFinite(x) && Number.isFinite(y))) {
        penDown = false; // a gap: the next finite point starts a new subpath
        continue;
      }
      d += `${d === "" ? "" : " "}${penDown ? "L" : "M"}${px(sx(x))} ${px(sy(y))}`;
      penDown = true;
      circles.push(
        `<circle data-point="" cx="${px(sx(x))}" cy="${px(sy(y))}" r="2.5" fill="${color}"><title>${name}: ${escapeHtml(formatNumber(x))}, ${escapeHtml(formatNumber(y))}</title></circle>`,
      );
    }
    parts.push(`<g class="series" data-series="${name}">`);
    if (d !== "") parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.5" stroke-linejoin="round"/>`);
    parts.push(...circles, "</g>");
  });
  parts.push("</svg>");
  return parts.join("");
}

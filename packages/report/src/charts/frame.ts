/**
 * What every chart shares: the <svg> element, title, legend, axes with ticks and grid lines, and
 * the palette. Every piece of text goes through escapeHtml.
 */
import { escapeHtml } from "../escape.js";
import { linear, px, tickLabel, type Ticks } from "./scale.js";

/**
 * Series colours in order. CoMLRL's target orange and comparator grey are kept out of it, so
 * they mean target and comparator wherever they appear (charts pass them explicitly).
 */
export const PALETTE = ["#1f77b4", "#2ca02c", "#9467bd", "#d62728", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939"] as const;
export const TARGET_COLOR = "#e87030";
export const COMPARATOR_COLOR = "#6e6e6e";

export function seriesColor(index: number, color?: string): string {
  return color !== undefined && /^#[0-9a-fA-F]{3,8}$/.test(color) ? color : PALETTE[index % PALETTE.length]!;
}

/** Options every chart takes. */
export interface SvgOptions {
  /** Pixel size (the viewBox too). */
  width?: number;
  height?: number;
  /**
   * Adds the SVG namespace, which a standalone .svg file needs. Left out by default: inline SVG in
   * HTML does not need it, and the report carries no URL at all.
   */
  xmlns?: boolean;
}

export interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

const CHAR_WIDTH = 6.5; // an estimate of 11px sans-serif, for laying out the legend

export function svgOpen(kind: string, title: string, width: number, height: number, xmlns: boolean | undefined): string {
  const ns = xmlns === true ? ` xmlns="http://www.w3.org/2000/svg"` : "";
  return (
    `<svg${ns} class="chart" data-chart="${escapeHtml(kind)}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(title)}" font-family="system-ui, sans-serif" font-size="11">` +
    `<title>${escapeHtml(title)}</title>` +
    `<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>` +
    `<text x="${px(width / 2)}" y="16" text-anchor="middle" font-size="13" font-weight="600">${escapeHtml(title)}</text>`
  );
}

export interface LegendEntry {
  name: string;
  color: string;
  /** A line swatch (line charts) or a filled square (bars). */
  swatch: "line" | "box";
}

/** The legend under the title, wrapped into rows; returns its markup and the height it takes. */
export function legend(entries: readonly LegendEntry[], width: number, y: number): { svg: string; height: number } {
  if (entries.length === 0) return { svg: "", height: 0 };
  const rowHeight = 15;
  let x = 12;
  let row = 0;
  const parts: string[] = [];
  for (const e of entries) {
    const w = 18 + e.name.length * CHAR_WIDTH + 14;
    if (x + w > width - 8 && x > 12) {
      row += 1;
      x = 12;
    }
    const cy = y + row * rowHeight;
    const swatch =
      e.swatch === "line"
        ? `<line x1="${px(x)}" y1="${px(cy)}" x2="${px(x + 14)}" y2="${px(cy)}" stroke="${e.color}" stroke-width="2"/>`
        : `<rect x="${px(x + 2)}" y="${px(cy - 5)}" width="10" height="10" fill="${e.color}"/>`;
    parts.push(`<g class="legend-item">${swatch}<text x="${px(x + 18)}" y="${px(cy + 4)}">${escapeHtml(e.name)}</text></g>`);
    x += w;
  }
  return { svg: `<g class="legend">${parts.join("")}</g>`, height: (row + 1) * rowHeight };
}

/** The plot area of a chart whose legend took `legendHeight` pixels. */
export function plotBox(width: number, height: number, legendHeight: number): Box {
  return { left: 62, top: 30 + legendHeight + 6, right: width - 14, bottom: height - 40 };
}

export interface AxisSpec {
  ticks: Ticks;
  label: string;
  /** Category labels instead of numeric ticks (bar charts): pixel centre and text. */
  categories?: readonly { x: number; label: string }[];
}

/** Grid lines, tick labels, axis lines and axis labels for a plot box. */
export function axes(box: Box, x: AxisSpec, y: AxisSpec): string {
  const sx = linear(x.ticks.domain, [box.left, box.right]);
  const sy = linear(y.ticks.domain, [box.bottom, box.top]);
  const parts: string[] = [`<g class="axes" stroke="#d0d0d0" stroke-width="1">`];
  for (const t of y.ticks.ticks) parts.push(`<line x1="${px(box.left)}" y1="${px(sy(t))}" x2="${px(box.right)}" y2="${px(sy(t))}"/>`);
  parts.push(`</g><g class="ticks" fill="#444444">`);
  for (const t of y.ticks.ticks)
    parts.push(`<text x="${px(box.left - 5)}" y="${px(sy(t) + 4)}" text-anchor="end">${escapeHtml(tickLabel(t, y.ticks.decimals))}</text>`);
  if (x.categories !== undefined) {
    for (const c of x.categories) parts.push(`<text x="${px(c.x)}" y="${px(box.bottom + 14)}" text-anchor="middle">${escapeHtml(c.label)}</text>`);
  } else {
    for (const t of x.ticks.ticks)
      parts.push(`<text x="${px(sx(t))}" y="${px(box.bottom + 14)}" text-anchor="middle">${escapeHtml(tickLabel(t, x.ticks.decimals))}</text>`);
  }
  parts.push(`</g>`);
  parts.push(
    `<g stroke="#888888" stroke-width="1"><line x1="${px(box.left)}" y1="${px(box.bottom)}" x2="${px(box.right)}" y2="${px(box.bottom)}"/><line x1="${px(box.left)}" y1="${px(box.top)}" x2="${px(box.left)}" y2="${px(box.bottom)}"/></g>`,
  );
  parts.push(`<text class="x-label" x="${px((box.left + box.right) / 2)}" y="${px(box.bottom + 32)}" text-anchor="middle">${escapeHtml(x.label)}</text>`);
  const cy = (box.top + box.bottom) / 2;
  parts.push(`<text class="y-label" x="14" y="${px(cy)}" text-anchor="middle" transform="rotate(-90 14 ${px(cy)})">${escapeHtml(y.label)}</text>`);
  return parts.join("");
}

/** The text a chart without data shows in its plot area. */
export function noData(box: Box, message = "no data"): string {
  return `<text class="no-data" x="${px((box.left + box.right) / 2)}" y="${px((box.top + box.bottom) / 2)}" text-anchor="middle" fill="#888888">${escapeHtml(message)}</text>`;
}

/**
 * Small HTML builders. Every argument that is text is escaped here, so sections cannot forget:
 * only `Html` values (markup made by these builders or by the chart functions) pass through raw.
 */
import { escapeHtml } from "../escape.js";

/** Markup that is already safe (escaped text, or SVG from the chart functions). */
export interface Html {
  readonly html: string;
}

export const raw = (html: string): Html => ({ html });
export type Content = string | Html | readonly Content[];

/** Text is escaped; Html passes through; lists are concatenated. */
export function render(c: Content): string {
  if (typeof c === "string") return escapeHtml(c);
  if (Array.isArray(c)) return (c as readonly Content[]).map(render).join("");
  return (c as Html).html;
}

export function el(tag: string, attrs: Record<string, string | undefined>, ...children: Content[]): Html {
  const a = Object.entries(attrs)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join("");
  return raw(`<${tag}${a}>${render(children)}</${tag}>`);
}

export const p = (...c: Content[]) => el("p", {}, ...c);
export const note = (...c: Content[]) => el("p", { class: "note" }, ...c);
export const code = (text: string) => el("code", {}, text);

/** A table: header row, then rows of cells (text or markup). */
export function table(header: readonly string[], rows: readonly (readonly Content[])[], cls?: string): Html {
  return el(
    "table",
    { class: cls },
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        header.map((h) => el("th", {}, h)),
      ),
    ),
    el(
      "tbody",
      {},
      rows.map((r) =>
        el(
          "tr",
          {},
          r.map((c) => el("td", {}, c)),
        ),
      ),
    ),
  );
}

/** Charts (SVG strings from the chart functions) in a wrapping grid. */
export function chartGrid(svgs: readonly string[]): Html {
  return raw(`<div class="charts">${svgs.map((s) => `<figure>${s}</figure>`).join("")}</div>`);
}

export function section(id: string, title: string, ...body: Content[]): Html {
  return el("section", { id }, el("h2", {}, title), ...body);
}

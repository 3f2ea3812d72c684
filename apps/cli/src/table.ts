/** Plain-text tables for a terminal: each column wraps its cells at word boundaries. */

/** Splits `text` into lines of at most `width` characters, breaking at spaces (a longer word is cut). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (let word of text.split(/\s+/).filter((w) => w !== "")) {
    while (word.length > width) {
      if (line !== "") lines.push(line);
      lines.push(word.slice(0, width));
      word = word.slice(width);
      line = "";
    }
    if (line === "") line = word;
    else if (line.length + 1 + word.length <= width) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line !== "" || lines.length === 0) lines.push(line);
  return lines;
}

/**
 * Renders rows under a header. Every column but the last is as wide as its widest cell, capped by
 * `maxWidths`; the last takes what is left of `width` (at least `minLast` characters).
 */
export function renderTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  o: { width: number; maxWidths: readonly number[]; minLast?: number },
): string {
  const n = header.length;
  const widths = header.slice(0, n - 1).map((h, c) => Math.min(o.maxWidths[c] ?? Infinity, Math.max(h.length, ...rows.map((r) => r[c]!.length))));
  const used = widths.reduce((a, w) => a + w + 2, 0);
  widths.push(Math.max(o.minLast ?? 30, o.width - used));
  const out: string[] = [];
  for (const row of [header, ...rows]) {
    const cells = row.map((cell, c) => wrap(cell, widths[c]!));
    const height = Math.max(...cells.map((l) => l.length));
    for (let i = 0; i < height; i++)
      out.push(
        cells
          .map((l, c) => (c === n - 1 ? (l[i] ?? "") : (l[i] ?? "").padEnd(widths[c]!)))
          .join("  ")
          .trimEnd(),
      );
  }
  return out.join("\n") + "\n";
}

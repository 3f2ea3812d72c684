/** The page around the sections: head (generator mark, inline CSS), header and navigation. No script, no external URL. */
import { escapeHtml } from "../escape.js";

/** Marks a file as made by pbrl report: writeReport replaces only files that carry it. */
export const GENERATOR_META = `<meta name="generator" content="pbrl report">`;

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;background:#f6f6f7}
header{background:#1d2733;color:#fff;padding:16px 24px}
header h1{margin:0 0 4px;font-size:20px}
header .run-dir{margin:0;font-family:ui-monospace,Menlo,monospace;font-size:12px;opacity:.85;word-break:break-all}
nav{margin-top:10px;display:flex;flex-wrap:wrap;gap:4px 14px}
nav a{color:#bcd4ff;text-decoration:none}
nav a:hover{text-decoration:underline}
main{padding:8px 24px 40px;max-width:1500px}
section{background:#fff;border:1px solid #e0e0e3;border-radius:8px;padding:12px 18px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:18px}
h3{margin:16px 0 6px;font-size:15px}
.note{color:#555;margin:6px 0}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border-bottom:1px solid #eee;padding:3px 10px 3px 0;text-align:left;vertical-align:top}
table.numbers td{font-variant-numeric:tabular-nums}
table.config td:first-child,table.facts td:first-child{color:#555;white-space:nowrap}
table.config td{font-family:ui-monospace,Menlo,monospace;font-size:12px;word-break:break-all}
.status{font-weight:600}
.status-finished{color:#1a7f37}.status-running{color:#0969da}.status-stopped{color:#b35900}.status-not-started{color:#666}
.problems li{color:#9a3412}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;border:1px solid #eee;border-radius:6px;overflow:hidden}
svg.chart{display:block}
details{margin:8px 0}
summary{cursor:pointer;font-weight:600}
.pair{margin:8px 0 14px}
.pair-head{margin:4px 0;color:#333}
table.completions{width:100%;table-layout:fixed}
table.completions th:first-child{width:70px}
table.completions pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,Menlo,monospace;max-height:16em;overflow:auto}
table.rationales pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,Menlo,monospace;max-height:12em;overflow:auto}
td.winner{background:#f0faf2}td.loser{background:#fdf3f2}
code{font-family:ui-monospace,Menlo,monospace;font-size:12px}
`;

export function page(o: { title: string; dir: string; nav: readonly { id: string; title: string }[]; body: string; generatedAt?: string }): string {
  const nav = o.nav.map((s) => `<a href="#${escapeHtml(s.id)}">${escapeHtml(s.title)}</a>`).join("");
  const stamp = o.generatedAt === undefined ? "" : `<p class="run-dir">generated ${escapeHtml(o.generatedAt)}</p>`;
  return (
    `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n${GENERATOR_META}\n<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
    `<title>${escapeHtml(o.title)}</title>\n<style>${CSS}</style>\n</head>\n<body>\n` +
    `<header><h1>${escapeHtml(o.title)}</h1><p class="run-dir">${escapeHtml(o.dir)}</p>${stamp}<nav>${nav}</nav></header>\n<main>\n${o.body}\n</main>\n</body>\n</html>\n`
  );
}

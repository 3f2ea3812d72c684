/**
 * Writes the report: `<run>/report.html` unless told otherwise, atomically (a temporary file in
 * the same folder, then a rename), so a reader — or a browser reloading it while the run goes on —
 * never sees half a page. An existing file is replaced only when pbrl report made it (its
 * generator meta tag), never anything else.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "@pbrl/core-tensor";
import { ReportError } from "./errors.js";
import { readRun, type ReadRunOptions } from "./read/read-run.js";
import { renderReport, type RenderOptions } from "./render/render-report.js";
import { GENERATOR_META } from "./render/page.js";

export const REPORT_FILE = "report.html";

/** Whether a file's start carries the mark renderReport puts in the head. */
async function madeByPbrl(file: string): Promise<boolean> {
  const handle = await fs.open(file, "r");
  try {
    const buf = Buffer.alloc(4096);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead).toString("utf8").includes(GENERATOR_META);
  } finally {
    await handle.close();
  }
}

/** Refuses an output path that is a folder, or a file pbrl report did not write. */
async function checkTarget(out: string): Promise<void> {
  const stat = await fs.stat(out).catch(() => undefined);
  if (stat === undefined) return;
  if (stat.isDirectory()) throw new ReportError(`${out} is a folder; give --out a file path such as ${path.join(out, REPORT_FILE)}`);
  if (!(await madeByPbrl(out)))
    throw new ReportError(`${out} exists and was not written by pbrl report; it is left alone. Choose another --out, or move that file away`);
}

export interface WriteReportOptions extends ReadRunOptions, RenderOptions {}

/**
 * Reads the run in `dir`, renders it and writes the report to `outFile` (default
 * `<dir>/report.html`); returns the path written. Throws ReportError when `dir` holds no run or
 * `outFile` is a file pbrl report did not make.
 */
export async function writeReport(dir: string, outFile?: string, options: WriteReportOptions = {}): Promise<string> {
  const out = outFile ?? path.join(dir, REPORT_FILE);
  await checkTarget(out);
  const run = await readRun(dir, options);
  const html = renderReport(run, options);
  await fs.mkdir(path.dirname(out), { recursive: true });
  await checkTarget(out); // again: the file may have appeared while the run was read
  await writeFileAtomic(out, html);
  return out;
}

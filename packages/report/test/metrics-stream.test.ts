// metrics.jsonl is read a chunk at a time, never as one string: a long run's file may be larger
// than V8's longest string (~512 MiB), and a crash may leave a long stretch of NUL bytes in it.
import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseMetrics, readRun, renderReport } from "../src/index.js";
import { MAX_METRICS_LINE_BYTES, readMetricsFile } from "../src/read/metrics-file.js";
import { lcg, removeTempDirs, tempDir, writeIterRun } from "./fixtures.js";

afterAll(removeTempDirs);

const record = (step: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ kind: "train", step, round: 1, epoch: 1, update: step, loss: 0.7 - step / 1e6, ...extra }) + "\n";

describe("readMetricsFile", () => {
  it("reads what parseMetrics reads from the whole text, lines across chunk boundaries and multi-byte characters included", async () => {
    const rand = lcg(7);
    // The first chunk ends inside a 4-byte character.
    const head = `{"kind":"train","step":0,"note":"`;
    const lines = [`${head}${"a".repeat(2 ** 20 - 2 - head.length)}🎉🎉"}\n`];
    // ~3.5 MiB: lines of every length straddle the 1 MiB chunk boundaries, some split inside a character.
    for (let i = 0, length = 0; length < 3.5 * 2 ** 20; i++) {
      const r = rand();
      if (r < 0.02) lines.push("\n");
      else if (r < 0.04) lines.push(`{not json ü\n`);
      else if (r < 0.05) lines.push(`{"step":${i}}\n`);
      else lines.push(record(i, { note: "ünïcødé 🎉 ".repeat(Math.floor(rand() * 300)) }));
      length += lines[lines.length - 1]!.length;
    }
    for (const tail of ["", `{"kind":"train","step":1,"rou`, record(1).trimEnd(), "   "]) {
      const dir = await tempDir();
      const file = path.join(dir, "metrics.jsonl");
      writeFileSync(file, lines.join("") + tail);
      expect(await readMetricsFile(file)).toEqual(parseMetrics(readFileSync(file, "utf8")));
    }
  });

  it("a missing file is undefined; an empty one has no records", async () => {
    const dir = await tempDir();
    expect(await readMetricsFile(path.join(dir, "metrics.jsonl"))).toBeUndefined();
    writeFileSync(path.join(dir, "metrics.jsonl"), "");
    expect(await readMetricsFile(path.join(dir, "metrics.jsonl"))).toEqual(parseMetrics(""));
  });
});

describe("pbrl report on a metrics.jsonl larger than V8's longest string", () => {
  it("reads the records around 600 MiB of NUL bytes (a crash's leftovers) and lists that line as skipped", async () => {
    const dir = await tempDir();
    await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 2, roundsWritten: 2, checkpointRound: 2, agentsSaved: false });
    const file = path.join(dir, "metrics.jsonl");
    const before = readFileSync(file, "utf8");
    const recordsBefore = parseMetrics(before).records.length;
    // A sparse hole: 600 MiB of zeros that take no disk space and no time to write.
    truncateSync(file, statSync(file).size + 600 * 2 ** 20);
    appendFileSync(file, "\n" + record(1000) + record(1001));
    expect(statSync(file).size).toBeGreaterThan(0x1fffffe8);

    const run = await readRun(dir);
    expect(run.metrics.records).toHaveLength(recordsBefore + 2);
    expect(run.metrics.records.slice(-2).map((r) => r.step)).toEqual([1000, 1001]);
    const holeLine = before.split("\n").length;
    expect(run.metrics.skipped).toEqual([{ line: holeLine, reason: `longer than ${MAX_METRICS_LINE_BYTES / 2 ** 20} MiB, which no record is` }]);
    expect(run.problems).toContain(`metrics.jsonl line ${holeLine}: longer than 16 MiB, which no record is; left out`);
    expect(renderReport(run)).toContain("metrics.jsonl line");
  }, 60_000);
});

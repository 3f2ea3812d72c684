import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GENERATOR_META, ReportError, writeReport } from "../src/index.js";
import { removeTempDirs, tempDir, writeIterRun } from "./fixtures.js";

afterAll(removeTempDirs);

async function run(): Promise<string> {
  const dir = await tempDir();
  await writeIterRun(dir, { trainer: "madpo_iter", numIterations: 2, roundsWritten: 2, checkpointRound: 2, agentsSaved: true });
  return dir;
}

describe("writeReport", () => {
  it("writes <run>/report.html by default, leaving no temporary file", async () => {
    const dir = await run();
    const out = await writeReport(dir);
    expect(out).toBe(path.join(dir, "report.html"));
    const html = readFileSync(out, "utf8");
    expect(html).toContain(GENERATOR_META);
    expect(readdirSync(dir).filter((n) => n.includes(".tmp"))).toEqual([]);
  });

  it("replaces a report it made before", async () => {
    const dir = await run();
    await writeReport(dir);
    writeFileSync(path.join(dir, "report.html"), readFileSync(path.join(dir, "report.html"), "utf8").replace("</main>", "<p>old</p></main>"));
    await writeReport(dir);
    expect(readFileSync(path.join(dir, "report.html"), "utf8")).not.toContain("<p>old</p>");
  });

  it("refuses to write over a file pbrl report did not make, and leaves it as it was", async () => {
    const dir = await run();
    const mine = path.join(dir, "notes.html");
    writeFileSync(mine, "<html>my notes</html>");
    await expect(writeReport(dir, mine)).rejects.toThrow(ReportError);
    await expect(writeReport(dir, mine)).rejects.toThrow(/was not written by pbrl report; it is left alone/);
    expect(readFileSync(mine, "utf8")).toBe("<html>my notes</html>");
  });

  it("refuses a folder as --out", async () => {
    const dir = await run();
    mkdirSync(path.join(dir, "out"));
    await expect(writeReport(dir, path.join(dir, "out"))).rejects.toThrow(/is a folder/);
  });

  it("writes to --out elsewhere, creating its folder", async () => {
    const dir = await run();
    const elsewhere = await tempDir();
    const out = await writeReport(dir, path.join(elsewhere, "reports", "run.html"));
    expect(readFileSync(out, "utf8")).toContain(`<section id="rounds">`);
    expect(readdirSync(dir)).not.toContain("report.html");
  });

  it("refuses a path that holds no run, before writing anything", async () => {
    const empty = await tempDir();
    await expect(writeReport(empty)).rejects.toThrow(/holds no pbrl run/);
    expect(readdirSync(empty)).toEqual([]);
  });
});

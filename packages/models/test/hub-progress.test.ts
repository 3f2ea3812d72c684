// Progress for people: in a log, one line per repository every few seconds and one at the end;
// on a terminal, one line redrawn in place. Listeners registered once hear every download.
import { describe, expect, it } from "vitest";
import { hubProgressPrinter, onHubProgress, type HubProgress } from "../src/index.js";

const ev = (file: string, bytes: number, total: number, done = false): HubProgress => ({ direction: "download", repo: "acme/m", file, bytes, total, done });

describe("hubProgressPrinter", () => {
  it("writes a line every interval when not a terminal, and one when all files are done", () => {
    let t = 0;
    const lines: string[] = [];
    const p = hubProgressPrinter((s) => lines.push(s), { isTTY: false, intervalMs: 5000, now: () => t });
    p(ev("config.json", 0, 1000));
    p(ev("model.safetensors", 0, 2_000_000_000));
    p(ev("config.json", 1000, 1000, true));
    t = 4000;
    p(ev("model.safetensors", 500_000_000, 2_000_000_000));
    expect(lines).toEqual([]);
    t = 5000;
    p(ev("model.safetensors", 600_000_000, 2_000_000_000));
    t = 6000;
    p(ev("model.safetensors", 700_000_000, 2_000_000_000));
    expect(lines).toEqual(["pbrl: downloading acme/m: 600 MB of 2.0 GB (30%), 1 of 2 files\n"]);
    p(ev("model.safetensors", 2_000_000_000, 2_000_000_000, true));
    expect(lines.at(-1)).toBe("pbrl: downloaded acme/m: 2.0 GB in 2 files\n");
  });

  it("redraws one line on a terminal", () => {
    let t = 0;
    let out = "";
    const p = hubProgressPrinter((s) => void (out += s), { isTTY: true, now: () => t });
    p(ev("a", 0, 10));
    t = 300;
    p(ev("a", 5, 10));
    t = 600;
    p(ev("a", 10, 10, true));
    expect(out).toBe("\r\x1b[2Kpbrl: downloading acme/m: 5 B of 10 B (50%), 0 of 1 files\r\x1b[2Kpbrl: downloaded acme/m: 10 B in 1 files\n");
  });

  it("process-wide listeners can be added and removed; a throwing one is ignored", async () => {
    const { emitProgress } = await import("../src/hub/progress.js");
    const seen: string[] = [];
    const stopA = onHubProgress(() => {
      throw new Error("display broke");
    });
    const stopB = onHubProgress((e) => seen.push(e.file));
    emitProgress(ev("x", 0, 1), undefined);
    stopB();
    emitProgress(ev("y", 0, 1), undefined);
    stopA();
    expect(seen).toEqual(["x"]);
  });
});

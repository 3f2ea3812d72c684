import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ProgressBar } from "../src/progress.js";

/** A real stream that collects what is written, with isTTY as a terminal or a pipe would report it. */
function sink(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  const s = new PassThrough();
  let out = "";
  s.on("data", (d: Buffer) => (out += d.toString()));
  Object.assign(s, { isTTY });
  return { stream: s as unknown as NodeJS.WriteStream, text: () => out };
}

describe("progress", () => {
  it("picks a bar on a terminal, lines on a pipe, nothing when not verbose", () => {
    expect(ProgressBar.enabledFor(true, sink(true).stream)).toBe("bar");
    expect(ProgressBar.enabledFor(true, sink(false).stream)).toBe("lines");
    expect(ProgressBar.enabledFor(false, sink(true).stream)).toBe("off");
  });

  it("on a pipe, writes whole lines (phase, done/total, rate, ETA, loss), at most one per interval, and one at the end", async () => {
    const { stream, text } = sink(false);
    const bar = new ProgressBar("round 1/3 collection", 40, "lines", stream);
    bar.update(10, "loss 0.6931");
    bar.update(20, "loss 0.6000"); // within the interval: no line
    await new Promise((r) => setTimeout(r, 1100));
    bar.finish("loss 0.5000");
    const lines = text()
      .split("\n")
      .filter((l) => l !== "");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^round 1\/3 collection: 10\/40 \([\d.]+\/s, ETA \d+:\d\d\) loss 0\.6931$/);
    expect(lines[1]).toMatch(/^round 1\/3 collection: 40\/40 \(done in 0:0[12]\) loss 0\.5000$/);
    expect(text().includes("\r") || text().includes("\u001b")).toBe(false);
  });

  it("on a terminal, redraws one line in place", () => {
    const { stream, text } = sink(true);
    const bar = new ProgressBar("epoch 1/1", 4, "bar", stream);
    bar.update(1);
    bar.finish();
    expect(text()).toMatch(/^\repoch 1\/1 █+░* 1\/4 .*\r.*4\/4.*\n$/s);
  });
});

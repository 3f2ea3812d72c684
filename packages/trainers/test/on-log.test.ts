import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { MADPOIterTrainer, type MetricsRecord } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

describe("metrics records", () => {
  it("carry time and elapsed_s, and reach onLog exactly as metrics.jsonl gets them", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-onlog-"));
    const seen: MetricsRecord[] = [];
    const before = Date.now();
    const t = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      onLog: (r) => seen.push({ ...r }),
      args: { ...ITERATIVE_RUN.args, num_iterations: 2, output_dir: out, verbose: false },
    });
    await t.train();
    t.dispose();
    const lines = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as MetricsRecord);
    expect(seen).toEqual(lines);
    expect(new Set(seen.map((r) => r.kind))).toEqual(new Set(["eval", "round", "train"]));
    let last = 0;
    for (const r of seen) {
      expect(r["time"]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(String(r["time"]))).toBeGreaterThanOrEqual(before - 1);
      expect(r["elapsed_s"]).toBeGreaterThanOrEqual(last);
      last = Number(r["elapsed_s"]);
    }
    expect(last).toBeGreaterThan(0);
  });
});

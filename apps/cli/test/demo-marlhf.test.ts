// `pbrl demo trainer=marlhf_iter` with a smaller budget than its defaults: the reward model must
// rank pairs it never saw better than chance, and RL against it must raise the task-reward eval.
// Runs on the native backend when its addon is built (as `pbrl demo` itself does), else on wasm;
// this file runs in its own worker, so the rest of the suite keeps PBRL_BACKEND's backend.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { loadNativeAddon } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";

process.env["PBRL_BACKEND"] = loadNativeAddon().ok ? "native" : "wasm";

describe("pbrl demo trainer=marlhf_iter", () => {
  it("fits a reward model that ranks unseen pairs above chance, and RL against it raises the eval reward (small budget)", async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-demo-")), "run");
    const r = await runCli(["demo", "trainer=marlhf_iter", `output_dir=${out}`, "num_iterations=2", "preference_num_candidates=6", "verbose=false"]);
    expect(r.code, r.err).toBe(0);
    const before = Number(/eval reward before: ([\d.]+)/.exec(r.out)![1]);
    const after = Number(/eval reward after : ([\d.]+)/.exec(r.out)![1]);
    const metrics = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number | string>);
    const heldout = metrics.filter((m) => "reward/heldout_accuracy" in m);
    expect(heldout).toHaveLength(1);
    const acc = heldout[0]!["reward/heldout_accuracy"] as number;
    const n = heldout[0]!["reward/heldout_pairs"] as number;
    console.log(
      `marlhf_iter demo (${process.env["PBRL_BACKEND"]}): eval ${before} -> ${after}; held-out reward-model accuracy ${acc.toFixed(3)} on ${n} pairs`,
    );
    expect(after).toBeGreaterThan(before + 0.03);
    expect(n).toBeGreaterThanOrEqual(128);
    expect(acc).toBeGreaterThan(0.55);
    expect(JSON.parse(readFileSync(path.join(out, "preference_replay", "iteration_0002.json"), "utf8")).scorer).toBe("task");
    // its report renders, with the reward model's held-out accuracy per round
    const report = await runCli(["report", out]);
    expect(report.code, report.err).toBe(0);
    const html = readFileSync(path.join(out, "report.html"), "utf8");
    expect(html).toMatch(/finished: 2 of 2 rounds/);
    const heldoutPercent = `${(acc * 100).toFixed(1)}%`;
    expect(html).toMatch(/<section id="reward-model"[\s\S]*held-out accuracy/);
    expect(html.slice(html.indexOf('<section id="reward-model"'))).toContain(heldoutPercent);
    expect(html).toMatch(/<section id="distributions"[\s\S]*data-bar/);
  }, 1_200_000);
});

// `pbrl demo` with a smaller budget than its defaults: the trained agents must clearly beat
// their starting point on the eval texts.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";

describe("pbrl demo", () => {
  it("raises the eval reward of both agents together (small budget)", async () => {
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-demo-")), "run");
    const r = await runCli(["demo", `output_dir=${out}`, "num_iterations=2", "preference_num_candidates=6", "num_train_epochs=1", "verbose=false"]);
    expect(r.code, r.err).toBe(0);
    const before = Number(/eval reward before: ([\d.]+)/.exec(r.out)![1]);
    const after = Number(/eval reward after : ([\d.]+)/.exec(r.out)![1]);
    expect(after).toBeGreaterThan(before + 0.1);
    expect(r.out).toMatch(/examples after training:\n {2}text: /);
    const evals = readFileSync(path.join(out, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { kind: string }).filter((m) => m.kind === "eval");
    expect(evals).toHaveLength(2);
    expect(readFileSync(path.join(out, "preference_replay", "iteration_0002.json"), "utf8")).toContain('"iteration":2');
  }, 600_000);

  it("rejects a bad override before doing any work", async () => {
    const r = await runCli(["demo", "dpo_beta=0", "num_train_epoch=1"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/num_train_epoch: unknown key for trainer madpo_iter \(did you mean "num_train_epochs"\?\)/);
  });
});

// SIGTERM during `pbrl train` with madpo_iter: the run finishes the round in progress and its
// checkpoint, exits with code 130 (stopped by a signal), and resume_from_checkpoint=true carries
// on from there.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { compileCli, packagesBuilt } from "./compiled-cli.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;

function train(main: string, args: string[], signalWhen?: RegExp): Promise<{ code: number | null; err: string; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, "train", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    let out = "";
    let sent = false;
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      if (signalWhen !== undefined && !sent && signalWhen.test(err)) {
        sent = true;
        child.kill("SIGTERM");
      }
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, err, out }));
  });
}

describe("signals", () => {
  it.skipIf(!packagesBuilt)(
    "SIGTERM stops after the round in progress with a checkpoint; resume finishes the run",
    async () => {
      const { main, cleanup } = await compileCli();
      try {
        const dir = mkdtempSync(path.join(tmpdir(), "pbrl-sigterm-"));
        writeFileSync(path.join(dir, "reward.mjs"), "export const reward_func = (c) => c[0].map((a, j) => (a + c[1][j]).split('e').length);\n");
        writeFileSync(path.join(dir, "train.jsonl"), ["The cat", "We drink", "A bird"].map((prompt) => JSON.stringify({ prompt })).join("\n"));
        const args = [
          `agent_model=${TINY}`,
          `train_dataset=${path.join(dir, "train.jsonl")}`,
          `reward_func=${path.join(dir, "reward.mjs")}`,
          "trainer=madpo_iter",
          "num_iterations=4",
          "preference_num_candidates=4",
          "max_new_tokens=6",
          "temperature=1.0",
          `output_dir=${path.join(dir, "out")}`,
        ];
        const stopped = await train(main, args, /pbrl: round 2: /);
        expect(stopped.code, stopped.err).toBe(130);
        expect(stopped.err).toMatch(/SIGTERM received; finishing round and checkpoint, then stopping/);
        expect(stopped.out).toMatch(/stopped after round 2 \(resume with resume_from_checkpoint=true\)/);
        expect(JSON.parse(readFileSync(path.join(dir, "out", "checkpoints", "latest.json"), "utf8")).round).toBe(2);
        // the report of the stopped run renders and says where it stopped
        const report = await runCli(["report", path.join(dir, "out")]);
        expect(report.code, report.err).toBe(0);
        expect(readFileSync(path.join(dir, "out", "report.html"), "utf8")).toMatch(/stopped after round 2 of 4/);
        const resumed = await train(main, [...args, "resume_from_checkpoint=true"]);
        expect(resumed.code, resumed.err).toBe(0);
        expect(resumed.err).toMatch(/resumed from .*round_0002 after round 2/);
        expect(resumed.out).toMatch(/2 rounds, \d+ new preference pairs/);
        expect(JSON.parse(readFileSync(path.join(dir, "out", "checkpoints", "latest.json"), "utf8")).round).toBe(4);
      } finally {
        cleanup();
      }
    },
    300_000,
  );
});

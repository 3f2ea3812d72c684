// A write the machine refuses — a full disk, a used-up quota, a file-size limit — names the file
// being written and says what to do, whichever of pbrl's writers it hits; nothing half-written
// is left behind. Real refusals: /dev/full answers every write with ENOSPC, and a child process
// under `ulimit -f` gets EFBIG for a write past its limit.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { MetricsLog } from "../src/index.js";

const PKG = path.resolve(import.meta.dirname, "..");
const VITEST = path.resolve(PKG, "node_modules/vitest/vitest.mjs");

describe("a full disk (ENOSPC)", () => {
  it.skipIf(!existsSync("/dev/full"))("while appending to metrics.jsonl: names the file, says to free space or choose another output_dir", () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-enospc-"));
    // metrics.jsonl on a device that is always full
    symlinkSync("/dev/full", path.join(out, "metrics.jsonl"));
    const log = new MetricsLog(out);
    let thrown: unknown;
    try {
      log.write({ kind: "train", step: 1, loss: 0.5 });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ name: "FileWriteError", code: "ENOSPC", path: path.join(out, "metrics.jsonl") });
    expect((thrown as Error).message).toBe(
      `cannot write ${path.join(out, "metrics.jsonl")}: no space left on the device (ENOSPC); free space on that disk, or choose an output folder on another disk (output_dir, --out)`,
    );
    expect((thrown as Error).cause).toMatchObject({ code: "ENOSPC" });
    // the record that was not written is not counted: a checkpoint would store the file's true length
    expect(log.lines).toBe(0);
    expect(log.records).toEqual([]);
  });
});

describe("a file-size limit (EFBIG, ulimit -f 256)", () => {
  it("every writer names its target file, never a temporary one, and leaves no temporary behind", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-efbig-"));
    const child = spawn(
      "bash",
      ["-c", 'ulimit -f 256 && exec "$0" "$@"', process.execPath, VITEST, "run", "--config", "vitest.child.config.ts", "test/child/disk-refusals.run.ts"],
      { cwd: PKG, env: { ...process.env, PBRL_TEST_OUT: out, PBRL_TEST_WRITE_LIMIT: "1" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    const line = /^PBRL (.*)$/m.exec(stdout);
    expect(line, `${code}\n${stdout}\n${stderr}`).not.toBeNull();
    const results = JSON.parse(line![1]!) as Record<string, string>;
    const refused = (file: string) =>
      `FileWriteError EFBIG: cannot write ${file}: the file would be larger than this process may write (EFBIG: the shell's file-size limit, ulimit -f, or the filesystem's largest file); raise the limit, or choose an output folder on another filesystem (output_dir, --out)`;
    expect(results["writeFileAtomic"]).toBe(refused(path.join(out, "state", "state.json")));
    // written in a temporary folder that would have become round_0001: named as it would be there
    expect(results["replaceDirAtomic"]).toBe(refused(path.join(out, "round_0001", "model.safetensors")));
    const events = readdirSync(path.join(out, "tensorboard"));
    expect(events).toEqual([expect.stringMatching(/^events\.out\.tfevents\.\d+\..+\.pbrl$/)]);
    expect(results["tensorboard"]).toBe(refused(path.join(out, "tensorboard", events[0]!)));
    expect(results["metrics"]).toBe(refused(path.join(out, "metrics.jsonl")));
    expect(readdirSync(out).sort()).toEqual(["metrics.jsonl", "state", "tensorboard"]);
    expect(readdirSync(path.join(out, "state"))).toEqual([]);
  }, 120_000);
});

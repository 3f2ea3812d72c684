// What the run-folder tests share: a madpo_iter run's options over a folder, and the message of
// the RunDirError planRunDir refuses them with.
import * as path from "node:path";
import { expect } from "vitest";
import { planRunDir, RunDirError, type RunDirOptions } from "../src/run-dir.js";

export const runDirOptions = (outputDir: string, more: Partial<RunDirOptions> = {}): RunDirOptions => ({
  outputDir,
  checkpointsDir: path.join(outputDir, "checkpoints"),
  resumeLatest: false,
  overwrite: false,
  trainer: "madpo_iter",
  rounds: 2,
  ...more,
});

export function planRefusal(o: RunDirOptions): string {
  try {
    planRunDir(o);
  } catch (err) {
    expect(err).toBeInstanceOf(RunDirError);
    expect((err as Error).name).toBe("RunDirError");
    return (err as Error).message;
  }
  throw new Error("expected a RunDirError");
}

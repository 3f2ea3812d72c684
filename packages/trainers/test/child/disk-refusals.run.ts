// Writes past the file-size limit the parent set (ulimit -f), for disk-refusals.test.ts: every
// writer pbrl has must name the file it was writing. Prints "PBRL <json>" of what each got.
//   PBRL_TEST_WRITE_LIMIT  "1": run (the resume tests' children run every file here, and skip this one)
//   PBRL_TEST_OUT          the folder to write in
import * as path from "node:path";
import { it } from "vitest";
import { replaceDirAtomic, writeFileAtomic, writeSafetensors } from "@pbrl/core-tensor";
import { MetricsLog, TensorBoardWriter } from "../../src/index.js";

/** More than the parent's limit of 256 KiB. */
const BIG = 400 * 1024;

it.runIf(process.env["PBRL_TEST_WRITE_LIMIT"] === "1")("writes past the file-size limit", async () => {
  const out = process.env["PBRL_TEST_OUT"]!;
  const results: Record<string, string> = {};
  const attempt = async (name: string, write: () => unknown): Promise<void> => {
    try {
      await write();
      results[name] = "written";
    } catch (e) {
      results[name] = `${(e as Error).name} ${(e as NodeJS.ErrnoException).code}: ${(e as Error).message}`;
    }
  };
  await attempt("writeFileAtomic", () => writeFileAtomic(path.join(out, "state", "state.json"), "x".repeat(BIG)));
  await attempt("replaceDirAtomic", () =>
    replaceDirAtomic(path.join(out, "round_0001"), (tmp) =>
      writeSafetensors(
        path.join(tmp, "model.safetensors"),
        new Map([["w", { tensor: { dtype: "float32", shape: [BIG / 4], data: new Float32Array(BIG / 4) }, dtype: "F32" }]]),
      ),
    ),
  );
  await attempt("tensorboard", () => new TensorBoardWriter(path.join(out, "tensorboard")).text(1, "samples", "x".repeat(BIG)));
  await attempt("metrics", () => new MetricsLog(out).write({ kind: "train", step: 1, note: "x".repeat(BIG) }));
  process.stdout.write(`PBRL ${JSON.stringify(results)}\n`);
});

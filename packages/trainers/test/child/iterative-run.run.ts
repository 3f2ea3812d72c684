// A MADPOIter run driven by environment variables, for the kill-and-resume test.
//   PBRL_TEST_OUT     output_dir
//   PBRL_TEST_RESUME  "1" to resume from the latest checkpoint
import * as path from "node:path";
import { it } from "vitest";
import { MADPOIterTrainer } from "../../src/index.js";
import { ITERATIVE_RUN } from "./iterative-run-config.js";

it("runs", async () => {
  const out = process.env["PBRL_TEST_OUT"]!;
  const t = new MADPOIterTrainer({
    ...ITERATIVE_RUN,
    args: { ...ITERATIVE_RUN.args, output_dir: out, resume_from_checkpoint: process.env["PBRL_TEST_RESUME"] === "1" ? true : null },
    // the parent watches for these lines to kill the run in the middle of a round
    log: (line) => process.stdout.write(`PBRL ${line}\n`),
    handleSignals: false,
  });
  await t.train();
  process.stdout.write(`PBRL done ${path.basename(out)}\n`);
  t.dispose();
});

// An iterative run driven by environment variables, for the kill-and-resume tests.
//   PBRL_TEST_OUT      output_dir
//   PBRL_TEST_RESUME   "1" to resume from the latest checkpoint
//   PBRL_TEST_TRAINER  madpo_iter (default) or marlhf_iter
//   PBRL_TEST_ROUNDS   num_iterations (default: the shared run's)
//   PBRL_TEST_HUMAN    a port: people label the rounds (preference_labeler=human) on that port
import * as path from "node:path";
import { it } from "vitest";
import { MADPOIterTrainer, MARLHFIterTrainer } from "../../src/index.js";
import { HUMAN_RUN_ARGS, ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./iterative-run-config.js";

it("runs", async () => {
  const out = process.env["PBRL_TEST_OUT"]!;
  const common = {
    ...ITERATIVE_RUN,
    // the parent watches for these lines to kill the run in the middle of a round
    log: (line: string) => process.stdout.write(`PBRL ${line}\n`),
    handleSignals: false,
    onLabelPage: (url: string) => process.stdout.write(`PBRL label at ${url}\n`),
  };
  const human = process.env["PBRL_TEST_HUMAN"];
  const args = {
    ...ITERATIVE_RUN.args,
    output_dir: out,
    resume_from_checkpoint: process.env["PBRL_TEST_RESUME"] === "1" ? true : null,
    ...(human !== undefined && { ...HUMAN_RUN_ARGS, human_label_port: Number(human) }),
    ...(process.env["PBRL_TEST_ROUNDS"] && { num_iterations: Number(process.env["PBRL_TEST_ROUNDS"]) }),
  };
  const t =
    process.env["PBRL_TEST_TRAINER"] === "marlhf_iter"
      ? new MARLHFIterTrainer({ ...common, args: { ...args, ...MARLHF_ITER_ARGS } })
      : new MADPOIterTrainer({ ...common, args });
  await t.train();
  process.stdout.write(`PBRL done ${path.basename(out)}\n`);
  t.dispose();
});

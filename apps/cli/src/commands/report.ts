import * as path from "node:path";
import { parseArgs } from "node:util";
import { writeReport } from "@pbrl/report";
import { UsageError, type CliIO } from "../io.js";

export const REPORT_HELP = `pbrl report RUN_DIR [--out FILE]

Writes one self-contained HTML file (no network needed to open it) about a run of any trainer,
finished, still running, or stopped mid-round: eval reward over updates, training loss,
accuracy and margins per agent; per round the new and trained pairs, the comparator's win rate
and invalid candidates; target-vs-comparator reward histograms on the same bins across rounds
(with log_reward_distribution=true); MARLHF's reward-model and RL metrics; sample joint
completions; the config and timings. See docs/report.md.

  --out FILE   where to write it (default RUN_DIR/report.html); an existing file is replaced
               only when an earlier pbrl report wrote it
`;

export async function reportCommand(argv: string[], io: CliIO): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { out: { type: "string" } }, strict: true, allowPositionals: true });
  } catch (err) {
    throw new UsageError(`pbrl report: ${(err as Error).message}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1)
    throw new UsageError(
      `pbrl report: give one run folder (the output_dir of a run), e.g. pbrl report pbrl-demo${positionals.length > 1 ? `; got ${positionals.length}: ${positionals.join(", ")}` : ""}`,
    );
  const file = await writeReport(path.resolve(positionals[0]!), values.out === undefined ? undefined : path.resolve(values.out));
  io.out(`report written to ${file} (one HTML file: open it in a browser)\n`);
  return 0;
}

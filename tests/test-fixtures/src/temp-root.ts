// A vitest globalSetup: every temporary folder of a suite's run — its tests' and those of the CLIs
// and ranks they start, all made under os.tmpdir(), which follows TMPDIR — lies in one folder of
// the run's own, removed when the run ends, so repeated runs do not fill /tmp.
// PBRL_KEEP_TEST_TMP=1 keeps it (its path is printed) to look at what a failed test left.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

export default function setup(): () => void {
  const root = mkdtempSync(path.join(tmpdir(), "pbrl-test-"));
  const before = process.env["TMPDIR"];
  process.env["TMPDIR"] = root;
  return () => {
    if (before === undefined) delete process.env["TMPDIR"];
    else process.env["TMPDIR"] = before;
    if (process.env["PBRL_KEEP_TEST_TMP"] === "1") process.stderr.write(`pbrl tests: temporary files kept in ${root}\n`);
    else rmSync(root, { recursive: true, force: true });
  };
}

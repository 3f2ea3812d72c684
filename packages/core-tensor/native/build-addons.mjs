#!/usr/bin/env node
// @pbrl/core-tensor's install step (its `install` script, so npm and pnpm run it where a native
// addon package's build is expected to run) and what the rebuild command runs: every addon's
// build script in turn. An addon is added by listing its build script below; each one prints its
// own line and exits 0 whether or not it built, so the install never fails for a missing library.
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/** Build scripts, relative to the package root; each must be listed in package.json `files` too. */
const ADDON_BUILD_SCRIPTS = ["native/build.mjs", "libtorch/build.mjs"];

const packageRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
for (const script of ADDON_BUILD_SCRIPTS) {
  // A process per script: one addon's crash (or process.exit) cannot stop the others' builds.
  const r = spawnSync(process.execPath, [path.join(packageRoot, script)], { cwd: packageRoot, stdio: "inherit" });
  if (r.status !== 0) {
    process.stderr.write(
      `pbrl addons: ${script} stopped (${r.error ? String(r.error) : `exit ${r.status ?? r.signal}`}); that addon is not available, pbrl falls back without it\n`,
    );
  }
}

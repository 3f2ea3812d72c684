/**
 * What pbrl's run-time messages say about getting or rebuilding its addons. The install step
 * (native/build-addons.mjs) names the same commands in its own lines (native/addon-builder.mjs);
 * tests/packaging checks both against a real install.
 */

/**
 * Rebuilds the addons in a project that installed the packages, with npm or pnpm (npm runs
 * @pbrl/core-tensor's install step again, also where pnpm was not allowed to run it;
 * `--foreground-scripts` shows the build's result line, which npm otherwise hides).
 */
export const REBUILD_ADDONS_COMMAND = "npm rebuild @pbrl/core-tensor --foreground-scripts";

/** The same in a checkout of pbrl's repository, where @pbrl/core-tensor is a workspace project. */
export const WORKSPACE_REBUILD_ADDONS_COMMAND = "pnpm --filter @pbrl/core-tensor build:addons";

/** How to rebuild an addon that exists but cannot be used, e.g. one built from older sources. */
export const REBUILD_ADDON_HINT = `rebuild it: \`${REBUILD_ADDONS_COMMAND}\` (in a pbrl checkout: \`${WORKSPACE_REBUILD_ADDONS_COMMAND}\`)`;

/** How to get the native backend, appended to every message saying it is unavailable. */
export const NATIVE_INSTALL_HINT =
  "it needs OpenBLAS and pbrl's C++ addon, which @pbrl/core-tensor's install step builds: " +
  "install OpenBLAS (Debian/Ubuntu: `apt-get install libopenblas-dev`; Fedora: `dnf install openblas-devel`) " +
  `and a C++ compiler, then build the addon: \`${REBUILD_ADDONS_COMMAND}\` (in a pbrl checkout: \`${WORKSPACE_REBUILD_ADDONS_COMMAND}\`)`;

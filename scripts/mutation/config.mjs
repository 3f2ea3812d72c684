// The StrykerJS settings every package's stryker.config.mjs shares (see README, "Mutation
// testing"). In place: the workspace's packages resolve each other through pnpm's per-package
// links and the tests' shared fixtures lie outside the package, which a sandbox copy of one
// package would lose; Stryker puts every file back when it ends (and on Ctrl-C).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** @param {{ mutate: string[], vitestConfig?: string }} o  vitestConfig: the vitest config Stryker runs (default vitest.config.ts), e.g. one that includes only the tests of the mutated files */
export function mutationConfig(o) {
  return {
    mutate: o.mutate,
    testRunner: "vitest",
    // pnpm keeps the plugin out of Stryker's own resolution paths: named by its file.
    plugins: [require.resolve("@stryker-mutator/vitest-runner")],
    vitest: { configFile: o.vitestConfig ?? "vitest.config.ts" },
    inPlace: true,
    incremental: true,
    incrementalFile: "reports/mutation/incremental.json",
    reporters: ["clear-text", "progress", "json", "html"],
    jsonReporter: { fileName: "reports/mutation/mutation.json" },
    htmlReporter: { fileName: "reports/mutation/mutation.html" },
    clearTextReporter: { allowEmojis: false, logTests: false, reportScoreTable: true },
    thresholds: { high: 90, low: 80, break: null },
    concurrency: 2,
    timeoutMS: 60_000,
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
  };
}

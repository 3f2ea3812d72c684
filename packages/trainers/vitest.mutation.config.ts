import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

// What `pnpm mutation trainers` runs (stryker.config.mjs): the unit tests of the run-folder and
// resume code, with real files in temporary folders; no test here trains a model.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        "test/run-dir.test.ts",
        "test/run-dir-messages.test.ts",
        "test/run-dir-property.test.ts",
        "test/run-dir-resume.test.ts",
        "test/run-marker.test.ts",
        "test/run-lock.test.ts",
        "test/resume-changes.test.ts",
        "test/checkpoint-manifest.test.ts",
        "test/training-checkpoint.test.ts",
        "test/run-records.test.ts",
      ],
    },
  }),
);

import { mutationConfig } from "../../scripts/mutation/config.mjs";

// The run-folder and resume code only, with the fast tests that cover it (vitest.mutation.config.ts):
// the full suite trains tiny models and takes tens of minutes.
export default mutationConfig({
  mutate: [
    "src/run-dir.ts",
    "src/run-marker.ts",
    "src/run-lock.ts",
    "src/round-resume.ts",
    "src/resume-changes.ts",
    "src/training-checkpoint.ts",
    "src/checkpoint-manifest.ts",
    "src/checkpoint-error.ts",
    "src/training-counters.ts",
    "src/run-config-record.ts",
  ],
  vitestConfig: "vitest.mutation.config.ts",
});

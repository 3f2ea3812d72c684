import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

// The tests Stryker runs (stryker.config.mjs): the unit tests of the mutated math modules, the
// updates on the tiny model, and where references are placed. The training runs of kl.test.ts,
// rollout-buffer.test.ts and value-clipping.test.ts are left out: seconds per mutant, and
// kl-checks.test.ts / update-checks.test.ts pin the same code directly.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        "test/advantages.test.ts",
        "test/value-loss.test.ts",
        "test/policy-loss.test.ts",
        "test/update-checks.test.ts",
        "test/update.test.ts",
        "test/kl-checks.test.ts",
        "test/devices.test.ts",
      ],
    },
  }),
);

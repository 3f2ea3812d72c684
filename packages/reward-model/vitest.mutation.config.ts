import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config";

// The tests StrykerJS runs against each mutant (stryker.config.mjs): the whole suite less
// parity.test.ts, which needs PyTorch, covers the same code as the tests kept here and would only
// slow every mutant down. device.test.ts's libtorch case skips where the addon is missing.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        "test/api.test.ts",
        "test/checks.test.ts",
        "test/device.test.ts",
        "test/edges.test.ts",
        "test/joint-text.test.ts",
        "test/loss.test.ts",
        "test/padding.test.ts",
        "test/save-load.test.ts",
        "test/tokenize.test.ts",
        "test/train.test.ts",
      ],
    },
  }),
);

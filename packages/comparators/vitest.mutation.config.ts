import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

// What `pnpm mutation comparators` runs (stryker.config.mjs): the tests of the selection and
// parsing code. The API tests use real loopback servers; the local comparators' tests sample the
// tiny fixture models, in well under a second each. Left out: the request loop's concurrency and
// timer-limit tests (test/api/concurrency.test.ts, timeout-limit.test.ts), seconds of waiting on
// code that is not mutated.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      include: [
        "test/api/formats.test.ts",
        "test/api/formats-parse.test.ts",
        "test/api/options.test.ts",
        "test/api/parsers.property.test.ts",
        "test/api/hostile.test.ts",
        "test/api/faults.test.ts",
        "test/api/truncate.test.ts",
        "test/api/setting-checks.test.ts",
        "test/api/errors.test.ts",
        "test/api/url-credentials.test.ts",
        "test/tagged-adapter.test.ts",
        "test/centralized.test.ts",
        "test/current.test.ts",
        "test/round-copies.test.ts",
        "test/history.test.ts",
        "test/history-weights.test.ts",
        "test/model.test.ts",
        "test/factory.test.ts",
        "test/devices.test.ts",
      ],
    },
  }),
);

import { defineConfig } from "vitest/config";

// Same layout as the other packages: the "pbrl-source" condition (harmless here, this package
// depends on no other @pbrl package) and one temporary root per run, removed when it ends.
export default defineConfig({
  resolve: { conditions: ["pbrl-source"] },
  ssr: { resolve: { conditions: ["pbrl-source"] } },
  test: { globalSetup: ["../../tests/test-fixtures/src/temp-root.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});

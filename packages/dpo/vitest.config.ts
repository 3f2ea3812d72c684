import { defineConfig } from "vitest/config";

// Tests run against the TypeScript sources of workspace packages (the "pbrl-source" export
// condition), so a package's tests never depend on a stale build of another.
export default defineConfig({
  resolve: { conditions: ["pbrl-source"] },
  ssr: { resolve: { conditions: ["pbrl-source"] } },
  test: { globalSetup: ["../../tests/test-fixtures/src/temp-root.ts"], setupFiles: ["test/setup.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});

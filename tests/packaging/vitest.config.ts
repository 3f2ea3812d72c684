import { defineConfig } from "vitest/config";

// The suites install real projects (pnpm with an empty store, npm) and build the native addon: one
// file at a time on a small machine, with room for a loaded one (both installs took 300 s at load 18).
export default defineConfig({
  test: { globalSetup: ["../test-fixtures/src/temp-root.ts", "./test/pack-workspace.ts"], fileParallelism: false, testTimeout: 600_000, hookTimeout: 600_000 },
});

import { defineConfig } from "vitest/config";

// The suites install real projects and build the native addon: one file at a time on a small machine.
export default defineConfig({ test: { globalSetup: ["./test/pack-workspace.ts"], fileParallelism: false, testTimeout: 300_000, hookTimeout: 300_000 } });

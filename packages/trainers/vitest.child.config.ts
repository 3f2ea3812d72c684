import { defineConfig } from "vitest/config";

// Runs test/child/*.run.ts programs as separate processes for the resume tests: one process,
// worker threads only, so a SIGKILL stops everything at once.
export default defineConfig({
  resolve: { conditions: ["pbrl-source"] },
  ssr: { resolve: { conditions: ["pbrl-source"] } },
  test: { include: ["test/child/**/*.run.ts"], pool: "threads", testTimeout: 600_000, reporters: ["dot"] },
});

import { mutationConfig } from "../../scripts/mutation/config.mjs";

// The pure math of the REINFORCE family and the KL (issue 34); Stryker runs only the tests that cover it.
export default mutationConfig({
  mutate: ["src/advantages.ts", "src/kl.ts", "src/value-loss.ts", "src/update.ts"],
  vitestConfig: "vitest.mutation.config.ts",
});

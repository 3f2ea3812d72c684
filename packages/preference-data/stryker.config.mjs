import { mutationConfig } from "../../scripts/mutation/config.mjs";

// The pure selection rules and the round collections built on them; datasets, sampling and
// reward calls come later (their tests are the slow ones).
export default mutationConfig({
  mutate: ["src/pair-selection.ts", "src/comparison-selection.ts", "src/compare.ts", "src/open-comparisons.ts", "src/collect.ts", "src/pair-record.ts"],
});

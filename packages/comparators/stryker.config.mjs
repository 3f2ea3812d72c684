import { mutationConfig } from "../../scripts/mutation/config.mjs";

// The selection and parsing code: the API comparator's request bodies, response parsing, error
// messages, token truncation and setting checks; joint-completion splitting, history weights, the
// current_copy choice, the tagged adapter, the device rules and the comparator selection. The
// API comparator's request loop, its transport, the factory and model loading come later. The
// tests run are the fast ones that cover these files (vitest.mutation.config.ts).
export default mutationConfig({
  mutate: [
    "src/api/formats.ts",
    "src/api/errors.ts",
    "src/api/truncate.ts",
    "src/api/setting-checks.ts",
    "src/split-joint.ts",
    "src/history-weights.ts",
    "src/round-copies.ts",
    "src/tagged-adapter.ts",
    "src/devices.ts",
    "src/comparators.ts",
  ],
  vitestConfig: "vitest.mutation.config.ts",
});

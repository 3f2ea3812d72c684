import { mutationConfig } from "../../scripts/mutation/config.mjs";

// vitest.mutation.config.ts: the suite less the test that needs PyTorch (parity.test.ts).
export default mutationConfig({ mutate: ["src/**/*.ts", "!src/index.ts"], vitestConfig: "vitest.mutation.config.ts" });

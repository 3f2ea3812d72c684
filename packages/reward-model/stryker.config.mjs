import { mutationConfig } from "../../scripts/mutation/config.mjs";

// vitest.mutation.config.ts: the suite less the test that needs PyTorch (parity.test.ts).
const config = mutationConfig({ mutate: ["src/**/*.ts", "!src/index.ts"] });
export default { ...config, vitest: { ...config.vitest, configFile: "vitest.mutation.config.ts" } };

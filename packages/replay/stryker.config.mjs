import { mutationConfig } from "../../scripts/mutation/config.mjs";

export default mutationConfig({ mutate: ["src/**/*.ts", "!src/index.ts"] });

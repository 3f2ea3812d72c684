// Every test file starts on the backend named by PBRL_BACKEND (default wasm), so the whole
// suite can be run on each backend: PBRL_BACKEND=cpu pnpm test.
import { parseBackendName, useBackend } from "@pbrl/core-tensor";

// Trainers started with backend="auto" follow PBRL_BACKEND too, so a suite never switches backend midway.
process.env["PBRL_BACKEND"] ??= "wasm";
await useBackend(parseBackendName(process.env["PBRL_BACKEND"]));

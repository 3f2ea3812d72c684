// Which errors are bad input (exit code 2) and which are not (1), by class name and inheritance,
// so errors other packages add later map without the CLI importing them.
import { describe, expect, it } from "vitest";
import { ConfigError } from "@pbrl/trainers";
import { MemoryBudgetError } from "@pbrl/core-tensor";
import { RewardError } from "@pbrl/preference-data";
import { EXIT, exitCodeFor, UsageError } from "../src/index.js";
import { RewardTimeoutError } from "../src/reward/reward-worker-host.js";

const named = (name: string) => Object.assign(new Error("x"), { name });

describe("exit codes", () => {
  it("are 0, 1, 2 and 130", () => {
    expect(EXIT).toEqual({ ok: 0, failed: 1, badInput: 2, stopped: 130 });
  });

  it("bad input is 2: the packages' typed errors, by class or by name", () => {
    for (const e of [
      new UsageError("u"),
      new ConfigError("MADPOConfig", ["x: bad"]),
      new MemoryBudgetError("m", { backend: "wasm", afterCrash: false }),
      new RewardError("r"),
      new RewardTimeoutError("t", 1),
    ]) {
      expect(exitCodeFor(e), e.name).toBe(2);
    }
    for (const name of [
      "CheckpointError",
      "AgentSourceError",
      "SafetensorsError",
      "WeightLoadError",
      "ModelSourceError",
      "TokenizerLoadError",
      "ModelConfigError",
      "PairFileError",
      "FormatterError",
      "RetokenizeError",
      "ReplayError",
      "DeviceUnavailableError",
      "BackendUnavailableError",
      "PrecisionUnavailableError",
      "PromptTooLongError",
      "RunDirError",
      "RunLockError",
      "ContextLengthError",
    ]) {
      expect(exitCodeFor(named(name)), name).toBe(2);
    }
  });

  it("a subclass of a bad-input class is bad input whatever its own name", () => {
    class ScorerTimeout extends RewardError {
      override name = "ScorerTimeout";
    }
    expect(exitCodeFor(new ScorerTimeout("slow"))).toBe(2);
  });

  it("anything else is 1", () => {
    for (const e of [
      new Error("bug"),
      new TypeError("x is undefined"),
      new RangeError("Invalid typed array length"),
      named("NonFiniteError"),
      named("ApiComparatorError"),
      "a string",
    ]) {
      expect(exitCodeFor(e)).toBe(1);
    }
  });
});

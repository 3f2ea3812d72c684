// The device fields and bf16 on a backend without devices (wasm): a name the backend cannot place
// is a config error naming the field, raised when the backend starts — before any model is
// loaded and before anything is written to output_dir — never accepted and ignored. And how each
// role's field resolves against the agents' devices (CoMLRL's fallbacks).
import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { DeviceUnavailableError, liveTensorCount, parseBackendName, useBackend } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { ConfigError, MARLHFIterTrainer, resolveAgents } from "../src/index.js";
import { referencesFor } from "../src/reference-policies.js";
import { referenceDevices, rewardModelDevice } from "../src/role-devices.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";
import { trainerWith, unusedDir } from "./device-runs.js";
import { TINY } from "./small-madpo-run.js";

afterEach(async () => {
  await useBackend(parseBackendName(process.env["PBRL_BACKEND"] ?? "wasm"));
});

describe("device fields on a backend without devices (wasm)", () => {
  const FIELDS = ["agent_devices", "reference_devices", "comparator_devices", "reward_model_device", "critic_devices"] as const;

  it.each(FIELDS)("%s=cuda:1 is a ConfigError naming the field and the backend that can place it, before output_dir is written", async (field) => {
    const out = unusedDir();
    const { run, configName } = trainerWith(field, { backend: "wasm", [field]: "cuda:1" }, out);
    const err = await run.train().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(
      `invalid ${configName}:\n  - ${field}: device cuda:1: the wasm backend computes on the CPU only; devices such as cuda:N need backend=libtorch with a CUDA libtorch`,
    );
    expect(existsSync(out)).toBe(false);
    run.dispose();
  });

  it("names every bad field at once, each device once, and only the bad entries of a list", async () => {
    const out = unusedDir();
    const { run } = trainerWith(
      "reward_model_device",
      { backend: "wasm", agent_devices: ["cpu", "cuda:1"], critic_devices: ["cuda:0", "cuda:0"], reward_model_device: "cpu", comparator_devices: "auto" },
      out,
    );
    const err = (await run.train().catch((e: unknown) => e)) as ConfigError;
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems).toEqual([
      "agent_devices: device cuda:1: the wasm backend computes on the CPU only; devices such as cuda:N need backend=libtorch with a CUDA libtorch",
      "critic_devices: device cuda:0: the wasm backend computes on the CPU only; devices such as cuda:N need backend=libtorch with a CUDA libtorch",
    ]);
    expect(existsSync(out)).toBe(false);
    run.dispose();
  });

  it("bf16 is a ConfigError naming bf16 and libtorch, before output_dir is written", async () => {
    const out = unusedDir();
    const { run } = trainerWith("bf16", { backend: "wasm", bf16: true }, out);
    await expect(run.train()).rejects.toThrow(
      new ConfigError("MADPOConfig", ["bf16: bf16 needs backend=libtorch (the wasm backend computes in float32 only); set backend=libtorch, or bf16=false"])
        .message,
    );
    expect(existsSync(out)).toBe(false);
    run.dispose();
  });

  it("cpu and auto are accepted for every field", async () => {
    const out = unusedDir();
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      args: {
        ...ITERATIVE_RUN.args,
        ...MARLHF_ITER_ARGS,
        backend: "wasm",
        verbose: false,
        output_dir: out,
        agent_devices: "cpu",
        reference_devices: ["auto"],
        comparator_devices: ["cpu", "auto"],
        reward_model_device: "cpu",
        critic_devices: "auto",
      },
      handleSignals: false,
    });
    const agents = await t.agents();
    expect(agents.map((a) => a.model.device())).toEqual(["cpu", "cpu"]);
    expect(existsSync(out)).toBe(false);
    t.dispose();
  });
});

describe("role devices resolve against the agents' devices", () => {
  it("reference_devices: null follows each agent, auto is the backend's default, names are kept; reward_model_device: null is agent 0's", async () => {
    const loaded = await loadPretrained(TINY);
    const agents = await resolveAgents({ agents: [loaded.model, loaded.model.clone()], tokenizer: loaded.tokenizer!, numAgents: 2 });
    expect(referenceDevices(null, agents)).toEqual(["cpu", "cpu"]);
    expect(referenceDevices("auto", agents)).toEqual(["auto", "auto"]);
    expect(referenceDevices(["cuda:1"], agents)).toEqual(["cuda:1", "cuda:1"]);
    expect(referenceDevices(["cuda:1", "auto"], agents)).toEqual(["cuda:1", "auto"]);
    expect(() => referenceDevices(["a", "b", "c"], agents)).toThrow(/reference_devices: has 3 entries; give one device or 2/);
    expect(rewardModelDevice(null, agents)).toBe("cpu");
    expect(rewardModelDevice("cuda:1", agents)).toBe("cuda:1");
    expect(rewardModelDevice("auto", agents)).toBe("auto");
    agents.forEach((a) => a.model.dispose());
  });

  it("the frozen references are copies of the initial policies on reference_devices; a device the backend lacks frees what was copied", async () => {
    await useBackend("wasm");
    const loaded = await loadPretrained(TINY);
    const agents = await resolveAgents({ agents: [loaded.model, loaded.model.clone()], tokenizer: loaded.tokenizer!, numAgents: 2 });
    expect(referencesFor({ reference_kl_enabled: false, reference_devices: "cuda:1" }, agents)).toBeUndefined();
    const refs = referencesFor({ reference_kl_enabled: true, reference_devices: null }, agents)!;
    refs.forEach((r, i) => {
      expect(r).not.toBe(agents[i]!.model);
      expect(r.device()).toBe("cpu");
    });
    refs.forEach((r) => r.dispose());
    const before = liveTensorCount();
    expect(() => referencesFor({ reference_kl_enabled: true, reference_devices: ["cpu", "cuda:1"] }, agents)).toThrow(DeviceUnavailableError);
    expect(liveTensorCount()).toBe(before);
    agents.forEach((a) => a.model.dispose());
  });
});

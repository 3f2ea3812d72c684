// Where the reference models (reference_devices) and critics (critic_devices) live: critic
// devices per plan, falling back to the agents' devices as CoMLRL does; a name the backend cannot
// place is an error where the model is made, never ignored; on libtorch the models are on the
// device named. PBRL_TEST_DEVICES (comma-separated, default "cpu") names the devices the libtorch
// tests place on; scripts/gpu/check.sh passes CUDA devices.
import { describe, expect, it } from "vitest";
import {
  deviceOf,
  DeviceUnavailableError,
  liveTensorCount,
  loadLibtorchAddon,
  nativeThreads,
  parseBackendName,
  RngStream,
  useBackend,
  type tf,
} from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import { setUpDeviceTests } from "@pbrl/test-fixtures";
import { ActorValueHead, Critic, criticDevices, CriticSourceError, frozenReference, resolveCriticSources } from "../src/index.js";
import { TINY_LLAMA } from "./helpers.js";

const load = loadLibtorchAddon(nativeThreads());
const { missing, agentDevices: DEVICES } = setUpDeviceTests(load, (backend) => useBackend(parseBackendName(backend)));

const onlyDevice = (vars: Iterable<tf.Variable>) => [...new Set([...vars].map((v) => deviceOf(v)))];
const ids = ["m", "m"];

describe("criticDevices", () => {
  const maac = resolveCriticSources({ rlAlgorithm: "maac", numAgents: 2, agentModelIds: ids });
  const iac = resolveCriticSources({ rlAlgorithm: "iac", numAgents: 2, agentModelIds: ids });
  const shared = resolveCriticSources({ rlAlgorithm: "iac", numAgents: 2, useSeparateCritic: false, agentModelIds: ids });
  const agents = ["cuda:0", "cuda:1"];

  it("MAAC's one critic: critic_devices' first entry, else agent 0's device", () => {
    expect(criticDevices(maac, null, agents)).toEqual(["cuda:0"]);
    expect(criticDevices(maac, "cuda:3", agents)).toEqual(["cuda:3"]);
    expect(criticDevices(maac, ["cuda:2", "cuda:3"], agents)).toEqual(["cuda:2"]);
    expect(criticDevices(maac, "auto", agents)).toEqual(["auto"]);
  });

  it("IAC's critics: critic_devices per agent (one entry for all), else each agent's device; none for value heads on the actors", () => {
    expect(criticDevices(iac, null, agents)).toEqual(["cuda:0", "cuda:1"]);
    expect(criticDevices(iac, "cpu", agents)).toEqual(["cpu", "cpu"]);
    expect(criticDevices(iac, ["cuda:1"], agents)).toEqual(["cuda:1", "cuda:1"]);
    expect(criticDevices(iac, ["cuda:1", "cuda:0"], agents)).toEqual(["cuda:1", "cuda:0"]);
    expect(criticDevices(shared, "cuda:1", agents)).toEqual([]);
    expect(criticDevices(resolveCriticSources({ rlAlgorithm: "magrpo", numAgents: 2, agentModelIds: ids }), "cuda:1", agents)).toEqual([]);
    expect(() => criticDevices(iac, ["a", "b", "c"], agents)).toThrow(CriticSourceError);
    expect(() => criticDevices(iac, ["a", "b", "c"], agents)).toThrow(/^critic_devices: has 3 entries; give one device or 2 \(one per agent\)$/);
    expect(() => criticDevices(maac, [], agents)).toThrow(/^critic_devices: an empty list/);
  });
});

describe("placing references and critics on a backend with one device (wasm)", () => {
  it("its own device and auto work as before; another name is an error, and nothing is left behind", async () => {
    await useBackend("wasm");
    const p = await loadPretrained(TINY_LLAMA);
    const before = liveTensorCount();
    for (const d of [undefined, "auto", "cpu"]) {
      const ref = frozenReference(p.model, d);
      expect(ref).not.toBe(p.model);
      expect(ref.device()).toBe("cpu");
      ref.dispose();
    }
    expect(() => frozenReference(p.model, "cuda:1")).toThrow(DeviceUnavailableError);
    const rng = RngStream.fromSeed(1, "head");
    expect(() => Critic.create({ backbone: p.model, tokenizer: p.tokenizer!, rng, learningRate: 1e-3, device: "cuda:1" })).toThrow(DeviceUnavailableError);
    expect(() => ActorValueHead.create({ hiddenSize: 64, rng, learningRate: 1e-3, device: "cuda:1" })).toThrow(DeviceUnavailableError);
    expect(liveTensorCount()).toBe(before);
    p.model.dispose();
  });
});

describe.skipIf(missing !== undefined)(`references and critics on libtorch devices${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it(`frozen references, critics (backbone and value head) and actor value heads live on ${DEVICES.join(", ")}`, async () => {
    await useBackend("libtorch");
    const p = await loadPretrained(TINY_LLAMA, { device: "cpu" });
    const rng = RngStream.fromSeed(1, "head");
    const made: { dispose: () => void }[] = [];
    for (const d of DEVICES) {
      const ref: CausalLM = frozenReference(p.model, d);
      made.push(ref);
      expect(ref).not.toBe(p.model);
      expect(onlyDevice(ref.params.values())).toEqual([d]);

      const critic = Critic.create({ backbone: p.model, tokenizer: p.tokenizer!, headHiddenDim: 8, rng, learningRate: 1e-3, device: d });
      made.push(critic);
      expect(onlyDevice(critic.namedVariables().values())).toEqual([d]);
      expect(critic.predict(["Hello world"])[0]).toEqual(expect.any(Number));

      // A backbone loaded elsewhere and handed over (copy: false) is moved to the critic's device.
      const own = await loadPretrained(TINY_LLAMA, { device: "cpu" });
      const handed = Critic.create({ backbone: own.model, tokenizer: own.tokenizer!, rng, learningRate: 1e-3, copy: false, device: d });
      made.push(handed);
      expect(onlyDevice(handed.namedVariables().values())).toEqual([d]);
      expect(own.model.params.get("model.norm.weight")!.isDisposed).toBe(d !== "cpu");

      const head = ActorValueHead.create({ hiddenSize: p.model.config.hiddenSize, rng, learningRate: 1e-3, device: d });
      made.push(head);
      expect(onlyDevice(head.head.params.values())).toEqual([d]);
    }
    made.forEach((m) => m.dispose());
    p.model.dispose();
  });
});

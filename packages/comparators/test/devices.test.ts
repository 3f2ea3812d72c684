// comparator_devices: which device each comparator model goes to (falling back to agent_devices,
// as CoMLRL), and on libtorch the models of `model`, `history` and `current_copy` really there.
// PBRL_TEST_DEVICES (comma-separated, default "cpu") names the devices the libtorch tests place
// on; scripts/gpu/check.sh passes CUDA devices.
import { mkdtemp, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
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
} from "@pbrl/core-tensor";
import { loadPretrained, savePretrained, type CausalLM } from "@pbrl/models";
import { setUpDeviceTests } from "@pbrl/test-fixtures";
import {
  comparatorDevices,
  comparatorDevicesDiffer,
  CurrentCopyComparator,
  HistoryComparator,
  HistoryWeights,
  ModelComparator,
  placement,
  RoundCopies,
} from "../src/index.js";
import { GEN, ITEMS, LLAMA, loadAgent, PROMPTS } from "./agents.js";

const load = loadLibtorchAddon(nativeThreads());
const { missing, agentDevices: DEVICES } = setUpDeviceTests(load, (backend) => useBackend(parseBackendName(backend)));
const info = load.ok ? load.info : undefined;

const devicesOf = (m: CausalLM) => new Set([...m.params.values()].map((v) => deviceOf(v)));

describe("comparator devices", () => {
  it("come from comparator_devices, else agent_devices, else auto", () => {
    expect(comparatorDevices(null, null, 2)).toEqual(["auto", "auto"]);
    expect(comparatorDevices(undefined, "cuda:1", 2)).toEqual(["cuda:1", "cuda:1"]);
    expect(comparatorDevices(null, ["cuda:0", "cuda:1"], 2)).toEqual(["cuda:0", "cuda:1"]);
    expect(comparatorDevices(["cuda:1"], ["cuda:0", "cuda:0"], 2)).toEqual(["cuda:1", "cuda:1"]);
    expect(comparatorDevices(["cuda:1", "auto"], null, 2)).toEqual(["cuda:1", "auto"]);
    // "auto" is a setting of its own, not a gap to fill from agent_devices
    expect(comparatorDevices("auto", "cuda:0", 2)).toEqual(["auto", "auto"]);
    expect(() => comparatorDevicesDiffer(null, ["a", "b", "c"], 2, [0])).toThrow(/^agent_devices: has 3 entries; give one device or 2 \(one per agent\)$/);
    expect(() => comparatorDevicesDiffer(["a", "b", "c"], null, 2, [0])).toThrow(/^comparator_devices: has 3 entries; give one device or 2 \(one per agent\)$/);
    expect([
      comparatorDevicesDiffer(null, ["a", "b"], 2, [0, 1]),
      comparatorDevicesDiffer(["a", "c"], ["a", "b"], 2, [0]),
      comparatorDevicesDiffer(["a", "c"], ["a", "b"], 2, [1]),
    ]).toEqual([false, false, true]);
    expect(() => comparatorDevices(["a", "b", "c"], null, 2)).toThrow(/^comparator_devices: has 3 entries; give one device or 2 \(one per agent\)$/);
  });

  it("place nothing on a backend with one device, where every model lives on it", async () => {
    await useBackend("wasm");
    expect([placement("cuda:1"), placement("cpu"), placement("auto"), placement(undefined)]).toEqual([undefined, undefined, undefined, undefined]);
    const agents = [await loadAgent(), await loadAgent()];
    const c = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), modelName: LLAMA, devices: ["cpu", "x"] });
    const models = c.source.policies().map((p) => p.model);
    expect(models[0]).toBe(models[1]); // one load: both names place it on the one device
    c.dispose();
    agents.forEach((a) => a.model.dispose());
  });
});

describe.skipIf(missing !== undefined)(`comparator models on libtorch devices${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it(`model: each agent's comparator model loads on its comparator device (${DEVICES.join(", ")}), model objects elsewhere are copied there`, async () => {
    await useBackend("libtorch");
    expect(placement("cpu")).toBe("cpu");
    expect(placement("auto")).toBeUndefined();
    const agents = [await loadAgent(), await loadAgent()];
    const before = liveTensorCount();
    const c = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), modelName: LLAMA, devices: DEVICES });
    const models = c.source.policies().map((p) => p.model);
    models.forEach((m, i) => expect([...devicesOf(m)]).toEqual([DEVICES[i]]));
    expect(models[0] === models[1]).toBe(DEVICES[0] === DEVICES[1]);
    await c.beginRound(1);
    const [set] = await c.sample(ITEMS.slice(0, 1), PROMPTS.slice(0, 1), 2);
    expect(set!.texts).toHaveLength(2);
    await c.endRound();
    c.dispose();
    expect(liveTensorCount()).toBe(before);

    const given = await loadPretrained(LLAMA, { device: "cpu" });
    const objects = await ModelComparator.load({ agents, generation: GEN, rng: RngStream.fromSeed(1), comparatorAgents: [given, given], devices: DEVICES });
    objects.source.policies().forEach((p, i) => {
      expect(p.model.device()).toBe(DEVICES[i]);
      expect(p.model === given.model).toBe(DEVICES[i] === "cpu");
    });
    objects.dispose();
    expect(given.model.params.get("model.norm.weight")!.isDisposed).toBe(false);
    given.model.dispose();
    agents.forEach((a) => a.model.dispose());
  });

  it("history and current_copy: round models on their comparator devices", async () => {
    await useBackend("libtorch");
    const tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-comparator-devices-"));
    const agents = [await loadAgent(), await loadAgent()];
    for (const [i, a] of agents.entries()) await savePretrained(path.join(tmp, "round_1", `agent_${i}`), { model: a.model, tokenizer: a.tokenizer });
    const history = new HistoryComparator({
      agents,
      generation: GEN,
      rng: RngStream.fromSeed(1),
      k: 1,
      weightsAt: (r) => path.join(tmp, `round_${r}`),
      devices: DEVICES,
    });
    await history.beginRound(1);
    history.source.policies().forEach((p, i) => expect([...devicesOf(p.model)]).toEqual([DEVICES[i]]));
    await history.endRound();
    history.dispose();

    const copies = new RoundCopies(agents, true, DEVICES);
    await copies.beginRound();
    copies.policies().forEach((p, i) => {
      expect(p.model).not.toBe(agents[i]!.model);
      expect([...devicesOf(p.model)]).toEqual([DEVICES[i]]);
    });
    await copies.endRound();
    copies.dispose();
    agents.forEach((a) => a.model.dispose());
    await rm(tmp, { recursive: true, force: true });
  });

  it("a device this libtorch lacks fails where the comparator model is placed", async () => {
    await useBackend("libtorch");
    const absent = info?.cuda === true ? `cuda:${info.cudaDevices}` : "cuda:0";
    const agents = [await loadAgent(), await loadAgent()];
    const before = liveTensorCount();
    const c = new ModelComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1), modelName: LLAMA, devices: ["cpu", absent] });
    await expect(c.beginRound(1)).rejects.toThrow(DeviceUnavailableError);
    c.dispose();
    expect(liveTensorCount()).toBe(before); // the model loaded for agent 0 was freed
    agents.forEach((a) => a.model.dispose());
  });

  it("history and current_copy fail on a device this libtorch lacks (a LoRA agent's snapshot too); unset devices load where the backend puts them", async () => {
    await useBackend("libtorch");
    const absent = info?.cuda === true ? `cuda:${info.cudaDevices}` : "cuda:0";
    const unavailable = new RegExp(`^device ${absent}: `);
    const tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-comparator-absent-"));
    const plain = await loadAgent();
    const lora = {
      ...plain,
      model: plain.model.withLora({ r: 2, alpha: 4, dropout: 0, targetModules: undefined, useRslora: false }, RngStream.fromSeed(4, "lora")),
    };
    const agents = [plain, lora];
    for (const [i, a] of agents.entries()) await savePretrained(path.join(tmp, "round_1", `agent_${i}`), { model: a.model, tokenizer: a.tokenizer });
    const weightsAt = (r: number) => path.join(tmp, `round_${r}`);
    const before = liveTensorCount();
    for (const agentIndices of [[0], [1]]) {
      const h = new HistoryWeights({ k: 1, weightsAt, agents, agentIndices, devices: [absent, absent] });
      const loading = h.beginRound(1);
      await expect(loading, `agent ${agentIndices[0]}`).rejects.toBeInstanceOf(DeviceUnavailableError);
      await expect(loading).rejects.toThrow(unavailable);
      h.dispose();
    }
    expect(liveTensorCount()).toBe(before);
    const unset = new HistoryWeights({ k: 1, weightsAt, agents });
    await unset.beginRound(1);
    unset.policies().forEach((p) => expect([...devicesOf(p.model)]).toEqual(["cpu"]));
    unset.dispose();

    const copies = new CurrentCopyComparator({ agents, generation: GEN, rng: RngStream.fromSeed(1), devices: ["cpu", absent] });
    await expect(copies.beginRound(1)).rejects.toThrow(unavailable);
    copies.dispose();
    expect(liveTensorCount()).toBe(before);
    lora.model.dispose();
    plain.model.dispose();
    await rm(tmp, { recursive: true, force: true });
  });
});

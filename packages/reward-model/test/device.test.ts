// reward_model_device: where the reward model's backbone and head live. A name the backend cannot
// place is an error, never ignored; on libtorch the model (created from a checkpoint or from a
// loaded model, or loaded from a save) is on the device named, and trains there. PBRL_TEST_DEVICES
// (comma-separated, default "cpu") names the devices the libtorch test places on;
// scripts/gpu/check.sh passes CUDA devices.
import { mkdtemp, rm as remove } from "node:fs/promises";
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
import { loadPretrained } from "@pbrl/models";
import { setUpDeviceTests } from "@pbrl/test-fixtures";
import { JointRewardModel } from "../src/index.js";
import { MARKER, markerPairs, TINY_LLAMA } from "./helpers.js";

const load = loadLibtorchAddon(nativeThreads());
const { missing, devices } = setUpDeviceTests(load, (backend) => useBackend(parseBackendName(backend)));
const DEVICES = [...new Set(devices)];

/** Every device the reward model's weights are on. */
const placed = (rm: JointRewardModel) => [...new Set([...rm.backbone.params.values(), ...rm.head.params.values()].map((v) => deviceOf(v)))];

describe("reward model devices on a backend with one device (wasm)", () => {
  it("its own device and auto work as before; another name is an error, and nothing is left behind", async () => {
    await useBackend("wasm");
    const rng = RngStream.fromSeed(1, "head");
    for (const device of [undefined, "auto", "cpu"]) {
      const rm = await JointRewardModel.create({ source: TINY_LLAMA, rng, ...(device !== undefined && { device }) });
      expect(placed(rm)).toEqual(["cpu"]);
      rm.dispose();
    }
    const p = await loadPretrained(TINY_LLAMA);
    const before = liveTensorCount();
    await expect(JointRewardModel.create({ source: TINY_LLAMA, rng, device: "cuda:1" })).rejects.toThrow(DeviceUnavailableError);
    await expect(JointRewardModel.create({ source: p, rng, device: "cuda:1" })).rejects.toThrow(/device cuda:1: the wasm backend computes on the CPU only/);
    expect(liveTensorCount()).toBe(before);
    p.model.dispose();
  });
});

describe.skipIf(missing !== undefined)(`reward model devices on libtorch${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it(`a reward model created from a checkpoint or a loaded model, or loaded from a save, lives and trains on ${DEVICES.join(", ")}`, async () => {
    await useBackend("libtorch");
    const tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-reward-device-"));
    const source = await loadPretrained(TINY_LLAMA, { device: "cpu" });
    const pairs = markerPairs(RngStream.fromSeed(2, "pairs"), 4);
    for (const device of DEVICES) {
      const fromDir = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(1, "head"), device });
      expect(placed(fromDir)).toEqual([device]);
      const fit = await fromDir.train(pairs, { learningRate: 1e-3, epochs: 1, batchSize: 2, rng: RngStream.fromSeed(3, "shuffle") });
      expect(fit.steps).toBe(2);
      expect(placed(fromDir)).toEqual([device]);
      const dir = path.join(tmp, device.replace(":", "_"));
      await fromDir.save(dir);
      const back = await JointRewardModel.load(dir, { device });
      expect(placed(back)).toEqual([device]);
      const probe = [{ prompts: ["Describe the cat.", "Review the road."], completions: ["cat", `road ${MARKER}`] }];
      expect(back.scores(probe)[0]).toBeCloseTo(fromDir.scores(probe)[0]!, 5);
      back.dispose();
      fromDir.dispose();

      const copied = await JointRewardModel.create({ source, rng: RngStream.fromSeed(1, "head"), device });
      expect(copied.backbone).not.toBe(source.model);
      expect(placed(copied)).toEqual([device]);
      copied.dispose();
    }
    source.model.dispose();
    await remove(tmp, { recursive: true, force: true });
  });
});

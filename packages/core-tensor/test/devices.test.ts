// Device names: checked against the active backend (never accepted and ignored), and tensor
// placement on libtorch. CUDA placement itself runs in scripts/gpu/check.sh on a CUDA machine.
import { afterEach, describe, expect, it } from "vitest";
import { checkDevice, deviceOf, DeviceUnavailableError, loadLibtorchAddon, nativeThreads, onDevice, tf, useBackend } from "../src/index.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

afterEach(async () => {
  await useBackend("wasm");
});

describe("devices on a backend with one device", () => {
  it("accepts cpu and auto, and refuses any other name, saying which backend can place it", async () => {
    await useBackend("wasm");
    expect(() => checkDevice("cpu")).not.toThrow();
    expect(() => checkDevice("auto")).not.toThrow();
    expect(() => checkDevice("cuda:1")).toThrow(DeviceUnavailableError);
    expect(() => checkDevice("cuda:1")).toThrow(
      /^device cuda:1: the wasm backend computes on the CPU only; devices such as cuda:N need backend=libtorch with a CUDA libtorch$/,
    );
    expect(() => onDevice("cuda", () => 1)).toThrow(/device cuda: the wasm backend/);
    const t = onDevice("cpu", () => tf.tensor1d([1, 2]));
    expect(deviceOf(t)).toBe("cpu");
    t.dispose();
  });
});

describe.skipIf(missing !== undefined)(`devices on libtorch${missing !== undefined ? ` (skipped: ${missing})` : ""}`, () => {
  it("places tensors where onDevice says, restores the default after, and checks names against the libtorch build", async () => {
    const info = load.ok ? load.info : undefined;
    await useBackend("libtorch");
    expect(() => checkDevice("cpu")).not.toThrow();
    expect(() => checkDevice("tpu")).toThrow(/^unknown device "tpu" \(expected cpu, cuda or cuda:N\)$/);
    if (info !== undefined && !info.cuda) expect(() => checkDevice("cuda:0")).toThrow(/^device cuda:0: this libtorch has no CUDA support \(a CPU build\)$/);
    if (info !== undefined && info.cuda) expect(() => checkDevice(`cuda:${info.cudaDevices}`)).toThrow(new RegExp(`only ${info.cudaDevices} CUDA device`));
    const t = onDevice("cpu", () =>
      tf.tensor2d([
        [1, 2],
        [3, 4],
      ]),
    );
    expect(deviceOf(t)).toBe("cpu");
    expect(() => onDevice("tpu", () => tf.tensor1d([1]))).toThrow(DeviceUnavailableError);
    const u = tf.matMul(t, t);
    expect(deviceOf(u)).toBe("cpu");
    expect(Array.from(u.dataSync())).toEqual([7, 10, 15, 22]);
    tf.dispose([t, u]);
  });
});

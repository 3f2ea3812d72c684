// What each backend can hold, the MemoryBudgetError, and the translation of a real heap crash.
import { afterEach, describe, expect, it } from "vitest";
import {
  formatBytes,
  guardHeap,
  parseBackendName,
  isHeapExhaustion,
  loadNativeAddon,
  memoryCapacity,
  MemoryBudgetError,
  registerMemoryLimit,
  tf,
  translateHeapExhaustion,
  useBackend,
  WASM_HEAP_MAX_BYTES,
} from "../src/index.js";

const startBackend = tf.getBackend();

afterEach(async () => {
  if (tf.getBackend() !== startBackend) await useBackend(parseBackendName(startBackend));
});

describe("memoryCapacity", () => {
  it("wasm: the 4 GB heap minus the live tensors", async () => {
    await useBackend("wasm");
    const before = memoryCapacity();
    expect(before.backend).toBe("wasm");
    expect(before.limitBytes).toBe(4294901760);
    expect(WASM_HEAP_MAX_BYTES).toBe(65535 * 65536);
    expect(before.usedBytes).toBe(tf.memory().numBytes);
    expect(before.availableBytes).toBe(before.limitBytes! - before.usedBytes);
    const t = tf.zeros([1000, 250]); // 1e6 bytes
    const after = memoryCapacity();
    expect(after.usedBytes - before.usedBytes).toBe(1_000_000);
    expect(after.availableBytes).toBe(before.availableBytes - 1_000_000);
    expect(after.why).toBe("its WebAssembly heap holds at most 4.00 GB, whatever the machine has");
    t.dispose();
  });

  it("cpu: no limit", async () => {
    await useBackend("cpu");
    const c = memoryCapacity();
    expect(c.limitBytes).toBeUndefined();
    expect(c.availableBytes).toBe(Number.POSITIVE_INFINITY);
  });

  it("a backend answers for itself; an unknown one has no limit", () => {
    expect(memoryCapacity("some-future-backend").limitBytes).toBeUndefined();
    registerMemoryLimit("some-future-backend", () => ({ limitBytes: 2 ** 30, why: "its device has 1 GB" }));
    const c = memoryCapacity("some-future-backend");
    expect(c.limitBytes).toBe(2 ** 30);
    expect(c.availableBytes).toBe(Math.max(0, 2 ** 30 - tf.memory().numBytes));
    expect(c.why).toBe("its device has 1 GB");
    registerMemoryLimit("some-future-backend", () => ({ limitBytes: undefined, why: "host memory" }));
    expect(memoryCapacity("some-future-backend").availableBytes).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("formatBytes", () => {
  it("uses binary GB / MB / KB", () => {
    expect(formatBytes(4294901760)).toBe("4.00 GB");
    expect(formatBytes(3 * 2 ** 30 + 2 ** 29)).toBe("3.50 GB");
    expect(formatBytes(512 * 2 ** 20)).toBe("512.0 MB");
    expect(formatBytes(1500)).toBe("2 KB");
    expect(formatBytes(Number.POSITIVE_INFINITY)).toBe("unlimited");
  });
});

// WebAssembly's own error class, as the wasm module throws it (TypeScript's ES lib does not declare it).
const { RuntimeError } = (globalThis as unknown as { WebAssembly: { RuntimeError: ErrorConstructor } }).WebAssembly;

describe("heap exhaustion", () => {
  const aborted = new RuntimeError("Aborted(). Build with -sASSERTIONS for more info.");
  const outOfBounds = new RuntimeError("memory access out of bounds");
  const addonCheck = new Error("pbrl_native: swiglu y: offset 4205632264 + 153600000 elements outside the heap of 4294901760 bytes");

  it("recognises the three ways a full heap shows, and nothing else", () => {
    expect(isHeapExhaustion(aborted)).toBe(true);
    expect(isHeapExhaustion(outOfBounds)).toBe(true);
    expect(isHeapExhaustion(addonCheck)).toBe(true);
    expect(isHeapExhaustion(new RuntimeError("unreachable"))).toBe(false);
    expect(isHeapExhaustion(new RangeError("memory access out of bounds"))).toBe(false);
    expect(isHeapExhaustion(new Error("pbrl_native: gather: index 9 outside [0, 4)"))).toBe(false);
    expect(isHeapExhaustion("Aborted()")).toBe(false);
  });

  it("translates them into a MemoryBudgetError that says what happened and what to do", () => {
    const e = translateHeapExhaustion(aborted, "generation");
    expect(e).toBeInstanceOf(MemoryBudgetError);
    const m = e as MemoryBudgetError;
    expect(m.message).toMatch(/WebAssembly heap \(at most 4 GB\) ran out of memory during generation \(RuntimeError: Aborted\(\)/);
    expect(m.message).toMatch(/no longer usable .*restart the process/);
    expect(m.message).toMatch(/smaller batch .*backend=cpu/);
    expect(m.details.afterCrash).toBe(true);
    expect(m.cause).toBe(aborted);
    expect((translateHeapExhaustion(addonCheck, "a training step") as Error).message).toMatch(/heap is full .*restart the process/);
    const other = new TypeError("x");
    expect(translateHeapExhaustion(other, "generation")).toBe(other);
  });

  it("guardHeap translates in sync and async code and passes everything else through", async () => {
    expect(guardHeap("x", () => 3)).toBe(3);
    expect(() =>
      guardHeap("loading the model", () => {
        throw outOfBounds;
      }),
    ).toThrow(/ran out of memory during loading the model/);
    await expect(guardHeap("training", async () => Promise.reject(aborted))).rejects.toBeInstanceOf(MemoryBudgetError);
    await expect(guardHeap("training", async () => 7)).resolves.toBe(7);
    const plain = new Error("plain");
    await expect(guardHeap("training", async () => Promise.reject(plain))).rejects.toBe(plain);
  });

  // Filling the heap for real, with 1 GB tensors until the 4 GB heap gives out. A crashed instance
  // stays dead for the rest of this process, so these run last in this file, native (a heap of
  // its own) before wasm.
  const native = loadNativeAddon();
  const crashBackends = [...(native.ok || process.env["PBRL_REQUIRE_NATIVE"] === "1" ? (["native"] as const) : []), "wasm" as const];
  it.each(crashBackends)("a real heap exhaustion on %s becomes a MemoryBudgetError, and the instance is dead as it says", async (backend) => {
    await useBackend(backend);
    const host = new Float32Array(2 ** 28);
    const kept: tf.Tensor[] = [];
    let thrown: unknown;
    try {
      guardHeap("filling the heap", () => {
        for (let i = 0; i < 6; i++) kept.push(tf.tensor(host));
      });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(MemoryBudgetError);
    const m = thrown as MemoryBudgetError;
    expect((m.cause as Error).name).toBe("RuntimeError");
    expect(m.message).toMatch(new RegExp(`the ${backend} backend's WebAssembly heap \\(at most 4 GB\\) ran out of memory during filling the heap`));
    expect(m.message).toMatch(/no longer usable/);
    expect(() => tf.add(tf.scalar(1), 1).dataSync()).toThrow(/Aborted|memory access out of bounds/);
  });
});

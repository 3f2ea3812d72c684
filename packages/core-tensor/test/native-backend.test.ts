// The `native` backend: which kernels the addon replaces, what only it has (data shared by
// Identity, the decoding step, a growing heap, its own bounds checks), its OpenBLAS kernels and
// the fallback to wasm. Its kernels against the pure-JS `cpu` reference are in kernels-vs-cpu.test.ts.
//
// The kernel tests need the built addon (`pnpm install` builds it; `node native/build.mjs` by
// hand). They skip, naming why, only when it is not built; with PBRL_REQUIRE_NATIVE=1 (set by
// .ci/run when OpenBLAS is installed) a missing addon fails instead, so CI cannot silently lose
// the native path.
import { afterEach, describe, expect, it } from "vitest";
import { expectSame as expectSameOn, on, rand } from "./compare-backends.js";
import { withBlasEnv } from "../src/blas-kernels.js";
import {
  blasCoreType,
  BackendUnavailableError,
  currentBackend,
  FUSED_KERNEL_NAMES,
  loadNativeAddon,
  NATIVE_KERNELS,
  nativeHeapOffsets,
  NativeDecodeCache,
  nativeDecodeStep,
  tf,
  useBackend,
  useDefaultBackend,
} from "../src/index.js";

const coreTypeBefore = process.env["OPENBLAS_CORETYPE"];
const load = loadNativeAddon();
const unavailable = load.ok ? undefined : load.reason;
const required = process.env["PBRL_REQUIRE_NATIVE"] === "1";
const expectSame = (f: () => tf.Tensor | tf.Tensor[], tol?: number): Promise<void> => expectSameOn("native", f, tol);

describe.skipIf(unavailable !== undefined && !required)(`native backend kernels vs cpu${unavailable !== undefined ? ` (skipped: ${unavailable})` : ""}`, () => {
  afterEach(async () => {
    await useBackend("wasm");
  });

  it("is available, says so, and replaces the heavy kernels with the addon's", async () => {
    expect(unavailable).toBeUndefined();
    const info = await useBackend("native");
    expect(info.name).toBe("native");
    expect(tf.getBackend()).toBe("native");
    expect(info.description).toMatch(
      /^tensor backend: native \(OpenBLAS sgemm, \w+ kernels: [^;]+; \d+ threads?, on the wasm heap(; OPENBLAS_CORETYPE=\w+ is not applied, set PBRL_BLAS_CORETYPE to choose)?\)/,
    );
    for (const name of Object.keys(NATIVE_KERNELS)) {
      expect(tf.getKernel(name, "native")?.kernelFunc).toBeDefined();
      expect(tf.getKernel(name, "native")!.kernelFunc).not.toBe(tf.getKernel(name, "wasm")!.kernelFunc);
    }
    // every other wasm kernel is there too, so nothing falls back to another backend; plus the
    // kernels of pbrl's fused ops (src/fused-ops.ts)
    expect(FUSED_KERNEL_NAMES).toEqual([
      "PbrlLogSoftmaxGrad",
      "PbrlLogSoftmaxSelect",
      "PbrlScatterAddRows",
      "PbrlRmsNorm",
      "PbrlRmsNormGrad",
      "PbrlSwiglu",
      "PbrlSwigluGrad",
      "PbrlRope",
      "PbrlAttention",
      "PbrlAttentionGrad",
      "PbrlAdamW",
    ]);
    expect(tf.getKernelsForBackend("native").length).toBe(tf.getKernelsForBackend("wasm").length + FUSED_KERNEL_NAMES.length);
    for (const name of FUSED_KERNEL_NAMES) expect(tf.getKernel(name, "native"), name).toBeDefined();
  });

  it("identity (tfjs's copy of every tensor a gradient saves) shares the data instead of copying it", async () => {
    await useBackend("native");
    const x = rand([64, 32], 55);
    const expected = x.dataSync().slice();
    const buffers = tf.memory().numDataBuffers;
    const y = tf.clone(x);
    expect(tf.memory().numDataBuffers).toBe(buffers);
    x.dispose();
    expect(y.dataSync()).toEqual(expected); // still alive: the data is freed with its last tensor
    y.dispose();
    await expectSame(() => tf.clone(rand([3, 5], 56)), 0);
    // saved tensors of a gradient: the same values as through cpu's identity
    await expectSame(() => tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.exp(v), v)))(rand([4, 6], 57)), 1e-6);
  });

  it("native decoding step: checks its arrays and token ids, and refuses a full cache", async () => {
    // Token-identical greedy generation against transformers on this path is in @pbrl/models'
    // parity tests (run on native by CI); here, what the addon refuses.
    await useBackend("native");
    const dims = { hidden: 8, heads: 2, kvHeads: 1, headDim: 4, intermediate: 16, vocab: 10, layers: 1, rmsNormEps: 1e-6 };
    const t = (shape: number[], seed: number): tf.Tensor => rand(shape, seed);
    // The decoder's order: embed, finalNorm, lmHead; inputNorm, q, k, v, o, 4 biases, postNorm, gate, up, down, 3 biases.
    const layer = [
      t([8], 4),
      t([8, 8], 5),
      t([4, 8], 6),
      t([4, 8], 7),
      t([8, 8], 8),
      undefined,
      undefined,
      undefined,
      undefined,
      t([8], 9),
      t([16, 8], 10),
      t([16, 8], 11),
      t([8, 16], 12),
      undefined,
      undefined,
      undefined,
    ];
    const tensors = [t([10, 8], 1), t([8], 2), t([10, 8], 3), ...layer];
    const weights = nativeHeapOffsets(tensors);
    const cache = new NativeDecodeCache(dims, 2, 2);
    const step = (ids: number[], maskLen: number) => ({
      ids: Int32Array.from(ids),
      cos: new Float32Array(8).fill(1),
      sin: new Float32Array(8),
      keyMask: new Uint8Array(maskLen).fill(1),
    });
    const logits = new Float32Array(20);
    nativeDecodeStep(weights, cache, step([1, 2], 2), logits);
    expect(cache.length).toBe(1);
    expect(logits.every((x) => Number.isFinite(x)) && logits.some((x) => x !== 0)).toBe(true);
    expect(() => nativeDecodeStep(weights, cache, step([1, 2], 2), logits)).toThrow(/decode: an array has the wrong length/); // mask of 2 × 1 for 2 × 2
    expect(() => nativeDecodeStep(weights, cache, step([1, 10], 4), logits)).toThrow(/decode: token id outside the vocabulary/);
    nativeDecodeStep(weights, cache, step([3, 4], 4), logits);
    expect(() => nativeDecodeStep(weights, cache, step([1, 2], 6), logits)).toThrow(/the cache is full \(2 positions\)/);
    tf.dispose(tensors.filter((x) => x !== undefined));
  });

  it("keeps working when the heap grows between calls (the buffer is re-read)", async () => {
    await useBackend("native");
    const a = rand([64, 64], 31);
    const big = tf.zeros([(64 * 1024 * 1024) / 4]); // 64 MiB: forces the wasm memory to grow
    const y = tf.matMul(a, a);
    const ref = await on("cpu", () => tf.matMul(rand([64, 64], 31), rand([64, 64], 31)));
    await useBackend("native");
    const got = y.dataSync();
    let diff = 0;
    for (let i = 0; i < got.length; i++) diff = Math.max(diff, Math.abs(got[i]! - ref[0]!.data[i]!));
    expect(diff).toBeLessThan(1e-4);
    tf.dispose([a, big, y]);
  });

  it("the addon rejects offsets outside the heap instead of writing there", async () => {
    expect(load.ok).toBe(true);
    if (!load.ok) return;
    const heap = new ArrayBuffer(1024);
    expect(() => load.addon.matmul(heap, 0, 0, 2048, 1, 4, 4, 4, false, false, 1, 1, null, null, -1, 0, 0, 0)).toThrow(/matmul out: offset 2048/);
    expect(() => load.addon.unary(heap, 0, 0, 512, 200)).toThrow(/unary output/);
    expect(() => load.addon.transpose(heap, 0, 0, Int32Array.from([2, 2]), Int32Array.from([0, 0]))).toThrow(/bad shape\/perm/);
    expect(() => load.addon.unary(heap, 99, 0, 0, 4)).toThrow(/unknown unary op 99/);
  });
});

describe("OpenBLAS kernel family", () => {
  it("PBRL_BLAS_CORETYPE chooses; otherwise OpenBLAS detects the processor, whatever OPENBLAS_CORETYPE says", () => {
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "Haswell" })).toBe("Haswell");
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "Haswell", OPENBLAS_CORETYPE: "Zen" })).toBe("Haswell");
    expect(blasCoreType({ OPENBLAS_CORETYPE: "Haswell" })).toBeUndefined(); // a machine-wide setting for other programs
    expect(blasCoreType({ PBRL_BLAS_CORETYPE: "" })).toBeUndefined();
    expect(blasCoreType({})).toBeUndefined();
  });

  it("OpenBLAS's variables are set only while an addon loads it, then restored for child processes", () => {
    const [a, b] = ["PBRL_TEST_BLAS_A", "PBRL_TEST_BLAS_B"];
    process.env[a] = "inherited";
    delete process.env[b];
    const seen = withBlasEnv({ [a]: undefined, [b]: "4" }, () => [process.env[a], process.env[b]]);
    expect(seen).toEqual([undefined, "4"]);
    expect([process.env[a], process.env[b]]).toEqual(["inherited", undefined]);
    expect(() =>
      withBlasEnv({ [a]: "x" }, () => {
        throw new Error("load failed");
      }),
    ).toThrow("load failed");
    expect(process.env[a]).toBe("inherited");
    delete process.env[a];
  });

  it.skipIf(!load.ok)(
    "the loaded OpenBLAS runs the chosen kernels, an inherited OPENBLAS_CORETYPE it did not apply is reported, and the environment is left as it was",
    async () => {
      expect(process.env["OPENBLAS_CORETYPE"]).toBe(coreTypeBefore);
      if (!load.ok) return;
      const chosen = process.env["PBRL_BLAS_CORETYPE"];
      if (chosen !== undefined && chosen !== "") expect(load.info.blasCore.toLowerCase()).toBe(chosen.toLowerCase());
      else expect(load.ignoredCoreType).toBe(coreTypeBefore === "" ? undefined : coreTypeBefore);
      const info = await useBackend("native");
      if (load.ignoredCoreType !== undefined)
        expect(info.description).toContain(`OPENBLAS_CORETYPE=${load.ignoredCoreType} is not applied, set PBRL_BLAS_CORETYPE to choose`);
      await useBackend("wasm");
    },
  );
});

describe("fallback to wasm", () => {
  const saved = { native: process.env["PBRL_NATIVE"], addon: process.env["PBRL_NATIVE_ADDON"], backend: process.env["PBRL_BACKEND"] };
  afterEach(async () => {
    for (const [k, v] of [
      ["PBRL_NATIVE", saved.native],
      ["PBRL_NATIVE_ADDON", saved.addon],
      ["PBRL_BACKEND", saved.backend],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await useBackend("wasm");
  });

  it("PBRL_NATIVE=off: the default backend is wasm, and its log line says why", async () => {
    process.env["PBRL_NATIVE"] = "off";
    delete process.env["PBRL_BACKEND"];
    const info = await useDefaultBackend();
    expect(info.name).toBe("wasm");
    expect(tf.getBackend()).toBe("wasm");
    expect(info.description).toMatch(/^tensor backend: wasm \(WebAssembly SIMD, single-threaded; native backend disabled by PBRL_NATIVE=off\)/);
    expect(currentBackend()).toEqual(info);
    await expect(useBackend("native")).rejects.toThrow(/backend=native is unavailable: disabled by PBRL_NATIVE=off; unset PBRL_NATIVE/);
  });

  it("an addon that is not there: backend=native is a clear BackendUnavailableError, the default falls back", async () => {
    process.env["PBRL_NATIVE_ADDON"] = "/nonexistent/pbrl_native.node";
    delete process.env["PBRL_NATIVE"];
    delete process.env["PBRL_BACKEND"];
    const err = await useBackend("native").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toMatch(
      /native addon not built \(\/nonexistent\/pbrl_native\.node does not exist\).*libopenblas-dev.*npm rebuild @pbrl\/core-tensor --foreground-scripts.*backend=wasm/,
    );
    expect(tf.getBackend()).toBe("wasm"); // the previous backend stays in use
    const info = await useDefaultBackend();
    expect(info.name).toBe("wasm");
    expect(info.description).toMatch(/native backend unavailable: native addon not built/);
  });

  it("a file that is not a loadable addon: the reason carries the loader's message", async () => {
    process.env["PBRL_NATIVE_ADDON"] = new URL("../package.json", import.meta.url).pathname;
    delete process.env["PBRL_NATIVE"];
    const r = loadNativeAddon();
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/native addon .*package\.json failed to load: /);
    await expect(useBackend("native")).rejects.toThrow(BackendUnavailableError);
  });

  it("an addon built from older sources is refused as out of date, saying how to rebuild it", async () => {
    process.env["PBRL_NATIVE_ADDON"] = new URL("fixtures/stale-addon.cjs", import.meta.url).pathname;
    delete process.env["PBRL_NATIVE"];
    const r = loadNativeAddon();
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.reason).toMatch(
        /stale-addon\.cjs failed to load: it is out of date \(no cpuFeatures, blasCores, setBlasCore, copy2d, gather, scatterAddRows, sum, logsoftmaxGrad, logsoftmaxSelect, rmsnorm, rmsnormGrad, swiglu, swigluGrad, rope, attention, attentionGrad, decode, sample, adamw\); rebuild it: `npm rebuild @pbrl\/core-tensor --foreground-scripts` \(in a pbrl checkout: `pnpm --filter @pbrl\/core-tensor build:addons`\)/,
      );
    await expect(useBackend("native")).rejects.toThrow(/out of date/);
  });

  it.skipIf(unavailable !== undefined && !required)("with the addon built and nothing forced, the default is native", async () => {
    delete process.env["PBRL_NATIVE"];
    delete process.env["PBRL_NATIVE_ADDON"];
    delete process.env["PBRL_BACKEND"];
    const info = await useDefaultBackend();
    expect(info.name).toBe("native");
    expect(info.description).toContain("OpenBLAS");
  });

  it("PBRL_BACKEND wins over the automatic choice", async () => {
    process.env["PBRL_BACKEND"] = "cpu";
    expect((await useDefaultBackend()).name).toBe("cpu");
  });
});

// The OpenBLAS kernel family the native backend runs: the choice from CPU features (a pure
// function, over the feature sets of real machines), and, on the loaded library, that a pick older
// than the CPU allows is replaced and the matrix products stay right.
import { describe, expect, it } from "vitest";
import { applyBlasCoreChoice, chooseBlasCore, loadNativeAddon, tf, useBackend, type CpuFeatures } from "../src/index.js";

const NONE: CpuFeatures = {
  avx: false,
  fma: false,
  avx2: false,
  avx512f: false,
  avx512dq: false,
  avx512cd: false,
  avx512bw: false,
  avx512vl: false,
  avx512bf16: false,
  amx: false,
};
const AVX2: CpuFeatures = { ...NONE, avx: true, fma: true, avx2: true };
const AVX512: CpuFeatures = { ...AVX2, avx512f: true, avx512dq: true, avx512cd: true, avx512bw: true, avx512vl: true };
const AVX512_BF16: CpuFeatures = { ...AVX512, avx512bf16: true };
const AVX512_BF16_AMX: CpuFeatures = { ...AVX512_BF16, amx: true };
/** What a DYNAMIC_ARCH OpenBLAS 0.3.21 can switch to. */
const ALL = ["Sandybridge", "Haswell", "SkylakeX", "Cooperlake"];

describe("chooseBlasCore", () => {
  it("replaces the Prescott fallback of an unrecognised model (generic VM model string) with the family the features allow", () => {
    // The Intel Xeon VM of issue 15: AVX-512 with BF16 and AMX, model string "Intel Xeon Processor", OpenBLAS picked Prescott.
    expect(chooseBlasCore({ features: AVX512_BF16_AMX, detected: "Prescott", available: ALL })).toEqual({
      switchTo: "Cooperlake",
      reason: "chosen by pbrl for the CPU's AVX-512 (F, DQ, CD, BW, VL, BF16, AMX); OpenBLAS's model table picked Prescott",
    });
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Prescott", available: ALL }).switchTo).toBe("Cooperlake");
    expect(chooseBlasCore({ features: AVX512, detected: "Prescott", available: ALL }).switchTo).toBe("SkylakeX");
    expect(chooseBlasCore({ features: AVX2, detected: "Prescott", available: ALL }).switchTo).toBe("Haswell");
    expect(chooseBlasCore({ features: { ...NONE, avx: true }, detected: "Nehalem", available: ALL }).switchTo).toBe("Sandybridge");
    expect(chooseBlasCore({ features: AVX512, detected: "", available: ALL }).switchTo).toBe("SkylakeX"); // no name at all
  });

  it("switches up when OpenBLAS's pick is older than the CPU, keeping AVX-512 without BF16 on SkylakeX", () => {
    expect(chooseBlasCore({ features: AVX512, detected: "Haswell", available: ALL }).switchTo).toBe("SkylakeX");
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Haswell", available: ALL }).switchTo).toBe("Cooperlake");
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Zen", available: ALL }).switchTo).toBe("Cooperlake"); // a Zen 4/5 taken for an older Zen
    expect(chooseBlasCore({ features: AVX512, detected: "Sandybridge", available: ALL }).switchTo).toBe("SkylakeX");
  });

  it("keeps OpenBLAS's pick when it is as recent as the CPU allows (it may know the model better)", () => {
    expect(chooseBlasCore({ features: AVX2, detected: "Zen", available: ALL })).toEqual({ reason: "OpenBLAS's choice for the CPU's AVX2 + FMA" });
    expect(chooseBlasCore({ features: AVX2, detected: "Haswell", available: ALL }).switchTo).toBeUndefined();
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Cooperlake", available: ALL }).switchTo).toBeUndefined();
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "SkylakeX", available: ALL }).switchTo).toBeUndefined(); // the same sgemm kernels
    expect(chooseBlasCore({ features: AVX512_BF16_AMX, detected: "SapphireRapids", available: ALL }).switchTo).toBeUndefined();
    expect(chooseBlasCore({ features: NONE, detected: "Prescott", available: ALL }).switchTo).toBeUndefined(); // SSE only: nothing better
  });

  it("never second-guesses PBRL_BLAS_CORETYPE", () => {
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Prescott", available: ALL, override: "Prescott" })).toEqual({
      reason: "set by PBRL_BLAS_CORETYPE",
    });
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Prescott", available: ALL, override: "" }).switchTo).toBe("Cooperlake");
  });

  it("says so when this OpenBLAS cannot switch, or lacks the family", () => {
    expect(chooseBlasCore({ features: AVX512, detected: "Prescott", available: [] })).toEqual({
      reason: "OpenBLAS's choice, older than the CPU's AVX-512 (F, DQ, CD, BW, VL): this OpenBLAS cannot switch kernels; set PBRL_BLAS_CORETYPE to choose",
    });
    expect(chooseBlasCore({ features: AVX512_BF16, detected: "Haswell", available: ["Sandybridge", "Haswell", "SkylakeX"] }).switchTo).toBe("SkylakeX");
    expect(chooseBlasCore({ features: AVX512, detected: "Haswell", available: ["Sandybridge", "Haswell"] }).reason).toContain(
      "this OpenBLAS has no SkylakeX kernels",
    );
  });
});

const load = loadNativeAddon();
const required = process.env["PBRL_REQUIRE_NATIVE"] === "1";
const AVX512_CORES = ["SkylakeX", "Cooperlake", "SapphireRapids"];

describe.skipIf(!load.ok && !required)("the loaded OpenBLAS", () => {
  it("runs the kernels the CPU's features call for, and the backend line names them and why", async () => {
    expect(load.ok, load.ok ? "" : load.reason).toBe(true);
    if (!load.ok) return;
    const features = load.addon.cpuFeatures();
    const override = process.env["PBRL_BLAS_CORETYPE"];
    const info = await useBackend("native");
    expect(info.description).toContain(`OpenBLAS sgemm, ${load.info.blasCore} kernels: ${load.blasCoreReason};`);
    if (override === undefined || override === "") {
      if (features.avx512f && features.avx512bw && features.avx512vl && features.avx512dq && features.avx512cd)
        expect(AVX512_CORES).toContain(load.info.blasCore);
      else if (features.avx2 && features.fma) expect(["Haswell", "Zen", "Excavator", ...AVX512_CORES]).toContain(load.info.blasCore);
    }
    await useBackend("wasm");
  });

  it("replaces an older pick at run time (as on a CPU OpenBLAS does not know), and sgemm stays right", async () => {
    if (!load.ok) return;
    const { addon } = load;
    const before = addon.info().blasCore;
    const probe = applyBlasCoreChoice(addon, undefined).info.blasCore; // what pbrl picks on this CPU from a fresh start
    const av = Float32Array.from({ length: 96 * 80 }, (_, i) => Math.sin(i));
    const bv = Float32Array.from({ length: 80 * 72 }, (_, i) => Math.cos(i * 0.7));
    const product = (): Float32Array => tf.tidy(() => tf.matMul(tf.tensor2d(av, [96, 80]), tf.tensor2d(bv, [80, 72])).dataSync() as Float32Array);
    await useBackend("cpu");
    const want = product();
    try {
      if (addon.blasCores().length === 0) return; // a non-DYNAMIC_ARCH OpenBLAS: nothing to switch
      expect(addon.setBlasCore("Sandybridge")).toBe("Sandybridge"); // stands in for the Prescott fallback
      const { info, reason } = applyBlasCoreChoice(addon, undefined);
      // The family of the CPU's level: OpenBLAS's own pick may be a sibling pbrl keeps (Zen on an AMD
      // CPU with AVX2), while pbrl switches an older pick to its first choice of that level (Haswell).
      const sameLevel = [AVX512_CORES, ["Haswell", "Zen", "Excavator"]].find((level) => level.includes(probe)) ?? [probe];
      expect(sameLevel).toContain(info.blasCore);
      if (probe !== "Sandybridge") expect(reason).toMatch(/^chosen by pbrl for the CPU's .*; OpenBLAS's model table picked Sandybridge$/);
      await useBackend("native");
      const got = product();
      for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-4);
    } finally {
      addon.setBlasCore(before);
      await useBackend("wasm");
    }
  });
});

import { describe, expect, it } from "vitest";
import { gemmChoiceFromBench } from "../src/libtorch/addon.js";

const FAMILY = "OpenBLAS SkylakeX kernels (OpenBLAS's choice for the CPU's AVX-512)";

describe("the libtorch float32 GEMM choice and its words", () => {
  it("names the chosen library's rate first and the other's after it, for both shapes", () => {
    // an Intel Xeon of this project: ATen ahead on both shapes
    expect(gemmChoiceFromBench({ aten: 342.4, openblas: 318.2, atenFewRows: 162, openblasFewRows: 94.4 }, FAMILY)).toEqual({
      library: "aten",
      fewRows: "aten",
      reason: `ATen's, measured 342 GFLOPS to 318 for ${FAMILY}; at most 64 rows (decoding): ATen's, measured 162 GFLOPS to OpenBLAS's 94 on 16 rows`,
    });
    // an AMD EPYC Zen 5: OpenBLAS ahead on both
    expect(gemmChoiceFromBench({ aten: 224, openblas: 471, atenFewRows: 35, openblasFewRows: 53 }, FAMILY)).toEqual({
      library: "openblas",
      fewRows: "openblas",
      reason: `${FAMILY}, measured 471 GFLOPS to ATen's 224; at most 64 rows (decoding): OpenBLAS, measured 53 GFLOPS to ATen's 35 on 16 rows`,
    });
  });

  it("takes OpenBLAS only when it is more than 5% faster, each shape apart", () => {
    const choice = gemmChoiceFromBench({ aten: 100, openblas: 105, atenFewRows: 100, openblasFewRows: 105.1 }, FAMILY);
    expect([choice.library, choice.fewRows]).toEqual(["aten", "openblas"]);
  });
});

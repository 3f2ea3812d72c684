import { describe, expect, it } from "vitest";
import { currentBackend, parseBackendName, tf, useBackend } from "../src/index.js";

describe("backends", () => {
  it("selects wasm and cpu and computes the same result on both", async () => {
    const results: number[][] = [];
    for (const name of ["wasm", "cpu"] as const) {
      const info = await useBackend(name);
      expect(info.name).toBe(name);
      expect(tf.getBackend()).toBe(name);
      expect(currentBackend()?.description).toContain(name);
      const y = tf.tidy(() =>
        tf.matMul(
          tf.tensor2d([
            [1, 2],
            [3, 4],
          ]),
          tf.tensor2d([[0.5], [-1]]),
        ),
      );
      results.push(Array.from(y.dataSync()));
      y.dispose();
    }
    expect(results[0]).toEqual(results[1]);
    expect(results[0]).toEqual([-1.5, -2.5]);
  });

  it("explains how to install the tensorflow backend when it is absent", async () => {
    await expect(useBackend("tensorflow")).rejects.toThrow(/@tensorflow\/tfjs-node.*install/s);
    // the previous backend stays usable
    expect(["wasm", "cpu"]).toContain(tf.getBackend());
  });

  it("rejects unknown backend names with the accepted list", () => {
    expect(() => parseBackendName("cuda")).toThrow(/backend: unknown value "cuda"; expected one of wasm, cpu, tensorflow/);
    expect(parseBackendName("cpu")).toBe("cpu");
  });
});

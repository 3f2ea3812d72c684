import { describe, expect, it } from "vitest";
import { assertNoTensorLeak, disposeAll, liveTensorCount, scoped, tf, TensorLeakError } from "../src/index.js";

describe("memory helpers", () => {
  it("scoped frees intermediates and keeps the result", () => {
    const before = liveTensorCount();
    const r = scoped(() => tf.add(tf.ones([2]), tf.ones([2])));
    expect(liveTensorCount()).toBe(before + 1);
    r.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it("assertNoTensorLeak passes clean code and names leaking code", async () => {
    await expect(assertNoTensorLeak("clean", () => tf.dispose(tf.ones([3])))).resolves.toBeUndefined();
    let leaked: tf.Tensor | undefined;
    await expect(
      assertNoTensorLeak("leaky step", async () => {
        leaked = tf.ones([3]);
      }),
    ).rejects.toThrow(TensorLeakError);
    await expect(assertNoTensorLeak("leaky step", () => void (leaked = tf.ones([1])))).rejects.toThrow(/leaky step leaked 1 tensor/);
    leaked?.dispose();
  });

  it("disposeAll frees maps and arrays", () => {
    const before = liveTensorCount();
    disposeAll(new Map([["a", tf.ones([1])]]));
    disposeAll([tf.ones([1]), tf.ones([2])]);
    expect(liveTensorCount()).toBe(before);
  });
});

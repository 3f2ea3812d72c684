// pbrl's walk of tfjs's gradient tape (lean-gradients.ts): the same gradients, bit for bit, as
// tfjs's own walk, with each intermediate gradient freed once used. The second test is also a
// canary: if tfjs starts freeing them itself, its peak drops to pbrl's and the test fails.
import { afterEach, describe, expect, it } from "vitest";
import { installLeanGradients, tf, uninstallLeanGradients, useBackend } from "../src/index.js";

afterEach(() => installLeanGradients());

/** A function with shared subexpressions, a split, a broadcast, a reduction and a weight used twice. */
function loss(w: tf.Tensor, b: tf.Tensor, x: tf.Tensor): tf.Scalar {
  const h = tf.relu(tf.add(tf.matMul(x, w), b));
  const [left, right] = tf.split(h, 2, 1) as [tf.Tensor, tf.Tensor];
  const mixed = tf.mul(tf.sigmoid(left!), tf.tanh(right!));
  const again = tf.matMul(tf.concat([mixed, mixed], 1), w, false, true); // w a second time
  return tf.sum(tf.square(tf.sub(again, tf.mean(again, 0, true)))) as tf.Scalar;
}

function inputs(): [tf.Tensor, tf.Tensor, tf.Tensor] {
  return [tf.randomNormal([6, 8], 0, 0.5, "float32", 1), tf.randomNormal([8], 0, 0.5, "float32", 2), tf.randomNormal([5, 6], 0, 1, "float32", 3)];
}

describe.each(["wasm", "cpu"] as const)("lean gradients on %s", (backend) => {
  it("are bit for bit tfjs's own, through variableGrads and grads, and leave no tensor behind", async () => {
    await useBackend(backend);
    const compute = (): number[][] => {
      const [w0, b0, x] = inputs();
      const w = tf.variable(w0, true, `lean-w-${backend}-${Math.random()}`);
      const b = tf.variable(b0, true, `lean-b-${backend}-${Math.random()}`);
      const before = tf.memory().numTensors;
      const { value, grads } = tf.variableGrads(() => loss(w, b, x), [w, b]);
      const viaGrads = tf.grads((a: tf.Tensor, c: tf.Tensor) => loss(a, c, x))([w, b]);
      const out = [value, grads[w.name]!, grads[b.name]!, ...viaGrads].map((t) => Array.from(t.dataSync()));
      tf.dispose([value, ...Object.values(grads), ...viaGrads]);
      expect(tf.memory().numTensors).toBe(before);
      tf.dispose([w0, b0, x, w, b]);
      return out;
    };
    const lean = compute();
    uninstallLeanGradients();
    const tfjs = compute();
    expect(lean).toEqual(tfjs);
  });

  it("free intermediate gradients as they go: a lower peak than tfjs's walk on a deep chain", async () => {
    await useBackend(backend);
    const w = tf.variable(tf.randomNormal([128, 128], 0, 0.05, "float32", 4), true, `lean-chain-${backend}-${Math.random()}`);
    const x = tf.randomNormal([64, 128], 0, 1, "float32", 5);
    const peak = async (): Promise<number> => {
      const p = await tf.profile(() => {
        const { value, grads } = tf.variableGrads(() => {
          let h = x;
          for (let i = 0; i < 24; i++) h = tf.tanh(tf.matMul(h, w));
          return tf.sum(h) as tf.Scalar;
        }, [w]);
        tf.dispose([value, ...Object.values(grads)]);
      });
      return p.peakBytes;
    };
    const lean = await peak();
    uninstallLeanGradients();
    const tfjs = await peak();
    // 24 layers of [64, 128] activations (32 KB each) and as many gradients: tfjs keeps both sets
    // to the end of the backward pass, pbrl drops each gradient after its layer.
    expect(tfjs - lean).toBeGreaterThan(20 * 64 * 128 * 4);
    tf.dispose([w, x]);
  });
});

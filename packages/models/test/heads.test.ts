import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { AdamW, RngStream, tf } from "@pbrl/core-tensor";
import { lastTokenIndices, ScalarHead } from "../src/index.js";

describe("last real token", () => {
  it("finds it for right and left padding", () => {
    // row 0 right-padded (len 2 of 4), row 1 left-padded (len 3 of 4), row 2 full
    const mask = [1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1];
    expect(Array.from(lastTokenIndices(mask, 3, 4))).toEqual([1, 7, 11]);
    expect(() => lastTokenIndices([0, 0], 1, 2)).toThrow(/row 0 has no real token/);
  });
});

describe("ScalarHead", () => {
  it("computes w·h (+ b) by hand in the one-layer form, named like transformers' score head", () => {
    const head = ScalarHead.fromHostWeights(
      { hiddenSize: 2, bias: true },
      new Map([
        ["score.weight", { dtype: "float32" as const, shape: [1, 2], data: Float32Array.from([2, -1]) }],
        ["score.bias", { dtype: "float32" as const, shape: [1], data: Float32Array.from([0.5]) }],
      ]),
    );
    const h = tf.tensor2d([
      [1, 1],
      [3, 4],
    ]);
    const y = head.apply(h);
    expect(Array.from(y.dataSync())).toEqual([1.5, 2.5]);
    tf.dispose([h, y]);
    head.dispose();
  });

  it("two-layer value head: relu(W0 h + b0), then W2 · (hand-computed)", () => {
    const f = (shape: number[], v: number[]) => ({ dtype: "float32" as const, shape, data: Float32Array.from(v) });
    const head = ScalarHead.fromHostWeights(
      { hiddenSize: 2, hiddenDim: 2, prefix: "v_head" },
      new Map([
        ["v_head.0.weight", f([2, 2], [1, 0, 0, -1])],
        ["v_head.0.bias", f([2], [0, 1])],
        ["v_head.2.weight", f([1, 2], [3, 5])],
      ]),
    );
    const h = tf.tensor2d([[2, 3]]); // layer 0: [2, -3+1=-2] → relu [2, 0] → 3·2 = 6
    const y = head.apply(h);
    expect(Array.from(y.dataSync())).toEqual([6]);
    tf.dispose([h, y]);
    head.dispose();
  });

  it("learns: a few AdamW steps move predictions toward targets", () => {
    const head = ScalarHead.init({ hiddenSize: 4, hiddenDim: 8, bias: true, prefix: "v_head" }, RngStream.fromSeed(0, "head"));
    const x = tf.tensor2d([
      [1, 0, 0, 1],
      [0, 1, 1, 0],
      [1, 1, 0, 0],
    ]);
    const target = tf.tensor1d([1, -1, 0.5]);
    const opt = new AdamW(head.params, { lr: 0.05, weightDecay: 0 });
    const loss = () => tf.mean(tf.square(tf.sub(head.apply(x), target))) as tf.Scalar;
    const first = tf.tidy(() => loss().dataSync()[0]!);
    for (let i = 0; i < 30; i++) {
      const { value, grads } = tf.variableGrads(loss, head.trainableVariables());
      opt.step(head.gradsByWeightName(grads));
      tf.dispose([value, ...Object.values(grads)]);
    }
    const last = tf.tidy(() => loss().dataSync()[0]!);
    expect(last).toBeLessThan(first * 0.1);
    tf.dispose([x, target]);
    opt.dispose();
    head.dispose();
  });

  it("saves and loads with its layout", async () => {
    const head = ScalarHead.init({ hiddenSize: 3, hiddenDim: 2, prefix: "v_head" }, RngStream.fromSeed(1, "head"));
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-head-")), "value_head.safetensors");
    await head.save(file);
    const back = await ScalarHead.load(file);
    expect(back.hiddenDim).toBe(2);
    for (const [k, t] of head.hostWeights()) expect(Array.from(back.hostWeights().get(k)!.data)).toEqual(Array.from(t.data));
    head.dispose();
    back.dispose();
  });
});

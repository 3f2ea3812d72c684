import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { clipGradNorm, globalGradNorm, tf } from "../src/index.js";

interface Fixture {
  shapes: Record<string, number[]>;
  max_norm: number;
  before: Record<string, number[]>;
  total_norm: number;
  after: Record<string, number[]>;
}
const fx = JSON.parse(readFileSync(path.join(import.meta.dirname, "fixtures", "clip.json"), "utf8")) as Fixture;

describe("gradient clipping", () => {
  it("computes the global norm by hand", () => {
    const a = tf.tensor([3, 0]);
    const b = tf.tensor([[4]]);
    expect(globalGradNorm([a, b])).toBeCloseTo(5, 6);
    tf.dispose([a, b]);
  });

  it("matches torch.nn.utils.clip_grad_norm_", () => {
    const grads = new Map(Object.entries(fx.before).map(([k, v]) => [k, tf.tensor(v, fx.shapes[k])]));
    const { grads: out, totalNorm } = clipGradNorm(grads, fx.max_norm);
    expect(totalNorm).toBeCloseTo(fx.total_norm, 5);
    for (const [k, v] of Object.entries(fx.after)) {
      const got = out.get(k)!.dataSync();
      v.forEach((e, i) => expect(got[i]).toBeCloseTo(e, 6));
    }
    expect(globalGradNorm(out.values())).toBeCloseTo(fx.max_norm, 4);
    tf.dispose([...out.values()]);
  });

  it("leaves gradients below the threshold untouched", () => {
    const g = new Map([["a", tf.tensor([0.3, 0.4])]]);
    const { grads, totalNorm } = clipGradNorm(g, 1);
    expect(totalNorm).toBeCloseTo(0.5, 6);
    expect(grads.get("a")).toBe(g.get("a"));
    tf.dispose([...grads.values()]);
  });
});

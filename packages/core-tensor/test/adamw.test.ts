import { readFileSync } from "node:fs";
import * as path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AdamW, tf, useBackend, type BackendName } from "../src/index.js";

interface Fixture {
  x: number[];
  x_shape: [number, number];
  y: number[];
  y_shape: [number, number];
  w_shape: [number, number];
  b_shape: [number];
  init: { w: number[]; b: number[] };
  options: { lr: number; betas: [number, number]; eps: number; weight_decay: number };
  steps: { loss: number; params: { w: number[]; b: number[] }; exp_avg: { w: number[]; b: number[] } }[];
}
const fx = JSON.parse(readFileSync(path.join(import.meta.dirname, "fixtures", "adamw.json"), "utf8")) as Fixture;

function maxRelErr(actual: ArrayLike<number>, expected: number[]): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!) / Math.max(Math.abs(expected[i]!), 1e-6));
  }
  return worst;
}

function setup() {
  const params = new Map<string, tf.Variable>([
    ["w", tf.variable(tf.tensor(fx.init.w, fx.w_shape))],
    ["b", tf.variable(tf.tensor(fx.init.b, fx.b_shape))],
  ]);
  const x = tf.tensor2d(fx.x, fx.x_shape);
  const y = tf.tensor2d(fx.y, fx.y_shape);
  const opt = new AdamW(params, { lr: fx.options.lr, betas: fx.options.betas, eps: fx.options.eps, weightDecay: fx.options.weight_decay });
  const step = (): number => {
    const { value, grads } = tf.variableGrads(
      () => tf.mean(tf.square(tf.sub(tf.add(tf.matMul(x, params.get("w")!), params.get("b")!), y))) as tf.Scalar,
      [...params.values()],
    );
    const named = new Map(Object.entries(grads).map(([k, g]) => [[...params].find(([, v]) => v.name === k)![0], g]));
    opt.step(named);
    const loss = value.dataSync()[0]!;
    tf.dispose([value, ...Object.values(grads)]);
    return loss;
  };
  const dispose = () => {
    opt.dispose();
    tf.dispose([x, y, ...params.values()]);
  };
  return { params, opt, step, dispose };
}

describe.each<BackendName>(["wasm", "cpu"])("AdamW on %s", (backend) => {
  beforeAll(async () => {
    await useBackend(backend);
  });

  it("matches torch.optim.AdamW for three steps within 1e-6 relative", () => {
    const { params, opt, step, dispose } = setup();
    for (const ref of fx.steps) {
      const loss = step();
      expect(Math.abs(loss - ref.loss) / ref.loss).toBeLessThan(1e-5);
      expect(maxRelErr(params.get("w")!.dataSync(), ref.params.w)).toBeLessThan(1e-6);
      expect(maxRelErr(params.get("b")!.dataSync(), ref.params.b)).toBeLessThan(1e-6);
    }
    const state = opt.getState();
    expect(state.steps).toEqual({ w: 3, b: 3 });
    expect(maxRelErr(state.expAvg.get("w")!, fx.steps[2]!.exp_avg.w)).toBeLessThan(1e-5);
    dispose();
  });

  it("continues identically after its state is saved and restored", () => {
    const a = setup();
    a.step();
    const saved = a.opt.getState();
    const savedW = a.params.get("w")!.dataSync().slice();
    const savedB = a.params.get("b")!.dataSync().slice();
    a.step();
    a.step();
    const b = setup();
    b.params.get("w")!.assign(tf.tensor(savedW, fx.w_shape));
    b.params.get("b")!.assign(tf.tensor(savedB, fx.b_shape));
    b.opt.setState(saved);
    b.step();
    b.step();
    expect(Array.from(b.params.get("w")!.dataSync())).toEqual(Array.from(a.params.get("w")!.dataSync()));
    a.dispose();
    b.dispose();
  });

  it("does not leak tensors across steps", () => {
    const { step, dispose } = setup();
    step();
    const before = tf.memory().numTensors;
    step();
    step();
    expect(tf.memory().numTensors).toBe(before);
    dispose();
  });
});

describe("AdamW moments", () => {
  it("are made with the optimizer for trainable weights, and saved only once a weight has had a gradient (as PyTorch's state)", () => {
    const w = tf.variable(tf.ones([3]));
    const b = tf.variable(tf.ones([2]));
    const frozen = tf.variable(tf.ones([4]), false);
    const before = tf.memory().numTensors;
    const opt = new AdamW(
      new Map([
        ["w", w],
        ["b", b],
        ["frozen", frozen],
      ]),
      { lr: 0.1 },
    );
    expect(tf.memory().numTensors).toBe(before + 4); // m and v of w and b
    expect(opt.getState().steps).toEqual({});
    const g = tf.ones([3]);
    opt.step(new Map([["w", g]]));
    const state = opt.getState();
    expect(state.steps).toEqual({ w: 1 });
    expect([...state.expAvg.keys()]).toEqual(["w"]);
    opt.setState(state);
    expect(tf.memory().numTensors).toBe(before + 5); // the restored moments of w, fresh ones for b, and g
    opt.step(new Map([["w", g]]));
    expect(opt.getState().steps).toEqual({ w: 2 });
    opt.dispose();
    expect(tf.memory().numTensors).toBe(before + 1);
    tf.dispose([w, b, frozen, g]);
  });
});

describe("AdamW validation", () => {
  it("rejects bad hyper-parameters and unknown gradients", () => {
    const p = new Map([["w", tf.variable(tf.zeros([2]))]]);
    expect(() => new AdamW(p, { lr: -1 })).toThrow(/lr/);
    expect(() => new AdamW(p, { lr: 1e-3, betas: [1, 0.9] })).toThrow(/betas/);
    const opt = new AdamW(p, { lr: 1e-3 });
    const g = tf.ones([2]);
    expect(() => opt.step(new Map([["nope", g]]))).toThrow(/unknown parameter "nope"/);
    tf.dispose([g, ...p.values()]);
    opt.dispose();
  });
});

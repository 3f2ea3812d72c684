import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import { loadPretrained, ScalarHead, ScalarHeadModel, type CausalLM, type Tokenizer } from "../src/index.js";
import { FIXTURES } from "./reference.js";

/** The smallest subclass: a scalar-head model as the critic and the reward model are. */
class TinyScalarModel extends ScalarHeadModel {
  static async make(): Promise<TinyScalarModel> {
    const p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
    const head = ScalarHead.init({ hiddenSize: p.model.config.hiddenSize, bias: true, prefix: "tiny_head" }, RngStream.fromSeed(7), 0.5);
    return new TinyScalarModel(p.model, head, p.tokenizer!);
  }

  constructor(backbone: CausalLM, head: ScalarHead, tokenizer: Tokenizer) {
    super(backbone, head, tokenizer);
  }

  save(dir: string): Promise<void> {
    return this.saveFolder(dir, "tiny_head.safetensors");
  }

  protected override disposedError(): Error {
    return new Error("the tiny model has been disposed");
  }
}

const ROWS = [
  [5, 9, 11, 3],
  [7, 2],
  [4, 4, 8],
];

describe("ScalarHeadModel", () => {
  it("gives each row the number it gets alone, whichever side the batch is padded on", async () => {
    const m = await TinyScalarModel.make();
    try {
      const alone = ROWS.map((r) => m.scalarsNoGrad([r], 1)[0]!);
      const right = m.scalarsNoGrad(ROWS, 3, "right");
      const left = m.scalarsNoGrad(ROWS, 3, "left");
      const chunked = m.scalarsNoGrad(ROWS, 2);
      alone.forEach((v, i) => {
        expect(Number.isFinite(v)).toBe(true);
        expect(right[i]).toBeCloseTo(v, 4);
        expect(left[i]).toBeCloseTo(v, 4);
        expect(chunked[i]).toBeCloseTo(v, 4);
      });
      // Different rows, different numbers: the head reads the rows, not a constant.
      expect(new Set(alone.map((v) => v.toFixed(5))).size).toBe(3);
    } finally {
      m.dispose();
    }
  });

  it("names gradients by weight (HF names, `<prefix>.*` for the head) and counts backbone plus head", async () => {
    const m = await TinyScalarModel.make();
    try {
      const { value, grads } = tf.variableGrads(() => tf.sum(m.scalarsForIds(ROWS)) as tf.Scalar, m.trainableVariables());
      const named = m.gradsByWeightName(grads);
      expect(named.has("tiny_head.weight")).toBe(true);
      expect(named.has("tiny_head.bias")).toBe(true);
      expect([...named.keys()].filter((k) => !k.startsWith("tiny_head.")).sort()).toEqual([...m.backbone.params.keys()].sort());
      expect(m.numParameters()).toBe(m.backbone.numParameters() + m.backbone.config.hiddenSize + 1);
      tf.dispose([value, ...named.values()]);
    } finally {
      m.dispose();
    }
  });

  it("saves the backbone folder with the head file, and refuses work once disposed", async () => {
    const m = await TinyScalarModel.make();
    const dir = path.join(mkdtempSync(path.join(tmpdir(), "scalar-head-")), "model");
    await m.save(dir);
    expect(existsSync(path.join(dir, "config.json"))).toBe(true);
    const head = await ScalarHead.load(path.join(dir, "tiny_head.safetensors"));
    expect([...head.params.keys()].sort()).toEqual(["tiny_head.bias", "tiny_head.weight"]);
    expect(Array.from(head.params.get("tiny_head.weight")!.dataSync())).toEqual(Array.from(m.head.params.get("tiny_head.weight")!.dataSync()));
    head.dispose();
    m.dispose();
    expect(m.isDisposed).toBe(true);
    expect(() => m.scalarsForIds(ROWS)).toThrow(/the tiny model has been disposed/);
  });
});

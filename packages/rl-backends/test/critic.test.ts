import { mkdtempSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { Critic, iacCriticText, maacCriticText, meanValueLoss } from "../src/index.js";
import { tinyLlama } from "./helpers.js";

const TEXTS = ["[Agent 0] Hello world\n\n[Agent 1] Hello world", "[Agent 0] Add two numbers", "Once upon a time there was a critic"];

describe("critic texts", () => {
  it("MAAC: CoMLRL's layout, [Agent i] prompts (0-based), then the joint action for q", () => {
    expect(maacCriticText(["P0", "P1"])).toBe("[Agent 0] P0\n\n[Agent 1] P1");
    expect(maacCriticText(["P0", "P1"], ["a0", "a1"])).toBe("[Agent 0] P0\n\n[Agent 1] P1\n\n[Joint Action]\n\n[Agent 0 action]\na0\n\n[Agent 1 action]\na1");
    expect(() => maacCriticText(["P0", "P1"], ["a0"])).toThrow(/1 action\(s\) for 2 agent prompt\(s\)/);
  });
  it("IAC: the agent's prompt, or prompt followed by its response", () => {
    expect(iacCriticText("Agent 1: hi")).toBe("Agent 1: hi");
    expect(iacCriticText("Agent 1: hi", " there")).toBe("Agent 1: hi there");
  });
});

describe("Critic", () => {
  let critic: Critic;
  beforeAll(async () => {
    const { model, tokenizer } = await tinyLlama();
    critic = Critic.create({ backbone: model, tokenizer, headHiddenDim: 16, rng: RngStream.fromSeed(1, "head"), learningRate: 3e-3, weightDecay: 0 });
  });
  afterAll(() => critic.dispose());

  it("values the last token of each text; batching and padding change nothing", () => {
    const batched = critic.predict(TEXTS);
    const alone = TEXTS.map((t) => critic.predict([t])[0]!);
    batched.forEach((v, i) => expect(v).toBeCloseTo(alone[i]!, 5));
    expect(new Set(batched.map((v) => v.toFixed(6))).size).toBe(3);
    expect(critic.head.params.has("value_head.0.weight")).toBe(true);
    expect(critic.optimizer.lr).toBe(3e-3);
    // A different text ending changes the value; the critic owns a copy of the backbone.
    expect(critic.predict(["Hello world!"])[0]).not.toBeCloseTo(critic.predict(["Hello world"])[0]!, 6);
  });

  it("fit: predictions move toward the targets on a fixed batch; metrics are the pre-step loss", () => {
    const rows = TEXTS.map((t, k) => ({ ids: critic.encode(t), targets: [[1, 1.5], [-1], [0.5, 0.5, 0.5]][k]! }));
    const before = critic.predict(TEXTS);
    const flatPred = rows.flatMap((r, k) => r.targets.map(() => before[k]!));
    const flatT = rows.flatMap((r) => [...r.targets]);
    const first = critic.fit(rows, { valueLossCoef: 0.6, where: "step 1" });
    expect(first.valueLoss).toBeCloseTo(meanValueLoss(flatPred, flatT), 5);
    expect(first.targetMean).toBeCloseTo(flatT.reduce((a, b) => a + b, 0) / 6, 10);
    expect(first.clipFraction).toBe(0);
    const n = liveTensorCount();
    let last = first;
    for (let s = 2; s <= 25; s++) last = critic.fit(rows, { valueLossCoef: 0.6, where: `step ${s}`, maxRowsPerForward: 2 });
    expect(liveTensorCount()).toBe(n);
    const after = critic.predict(TEXTS);
    const err = (v: number[]) => rows.reduce((a, r, k) => a + r.targets.reduce((b, t) => b + Math.abs(v[k]! - t), 0), 0);
    expect(err(after)).toBeLessThan(0.5 * err(before));
    expect(last.valueLoss).toBeLessThan(0.5 * first.valueLoss);
  });

  it("clipping relative to the old values limits how far one step can pull the prediction", async () => {
    // A fresh critic (no Adam momentum from earlier steps): a zero gradient moves nothing.
    const { model, tokenizer } = await tinyLlama();
    const critic = Critic.create({ backbone: model, tokenizer, rng: RngStream.fromSeed(2, "head"), learningRate: 3e-3, weightDecay: 0 });
    const rows = [{ ids: critic.encode(TEXTS[2]!), targets: [50], oldValues: [critic.predict([TEXTS[2]!])[0]! - 1] }];
    // V − V_old = 1 > ε = 0.2 and the clipped term (V_old + 0.2 − 50)² is larger: no gradient, nothing moves.
    const before = critic.predict([TEXTS[2]!])[0]!;
    const m = critic.fit(rows, { valueLossCoef: 1, clipRange: 0.2, where: "clipped" });
    expect(m.clipFraction).toBe(1);
    expect(critic.predict([TEXTS[2]!])[0]).toBeCloseTo(before, 6);
    expect(() => critic.fit([{ ids: rows[0]!.ids, targets: [1] }], { valueLossCoef: 1, clipRange: 0.2, where: "x" })).toThrow(/needs one old value per target/);
    expect(() => critic.fit(rows, { valueLossCoef: -1, where: "x" })).toThrow(/value_loss_coef/);
    expect(() => critic.fit([{ ids: rows[0]!.ids, targets: [NaN] }], { valueLossCoef: 1, where: "epoch 1, batch 2" })).toThrow(
      /target 0 of row 0 is NaN in epoch 1, batch 2/,
    );
    // Without clipping the same step moves the prediction toward 50.
    critic.fit([{ ids: rows[0]!.ids, targets: [50] }], { valueLossCoef: 1, where: "unclipped" });
    expect(critic.predict([TEXTS[2]!])[0]).toBeGreaterThan(before + 1e-3);
    critic.dispose();
  });

  it("save and load round-trip the backbone and head", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pbrl-critic-"));
    try {
      await critic.save(path.join(dir, "critic"));
      const back = await Critic.load(path.join(dir, "critic"), { learningRate: 1e-3 });
      const a = critic.predict(TEXTS);
      back.predict(TEXTS).forEach((v, i) => expect(v).toBeCloseTo(a[i]!, 5));
      back.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

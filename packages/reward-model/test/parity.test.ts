// The joint reward model against the PyTorch reference (scripts/reference/make_reward_model_fixtures.py):
// tiny-llama backbone, the same head weights, the same pairs.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadLibtorchAddon, loadNativeAddon, nativeThreads, readSafetensors, tf, useBackend } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { describeEachBackend, expectCloseToReference, maxAbsDifference, MODEL_FIXTURES } from "@pbrl/test-fixtures";
import type { PairRecord } from "@pbrl/preference-data";
import { JointRewardModel, jointText, padRows } from "../src/index.js";
import { FIXTURES, TINY_LLAMA } from "./helpers.js";

interface Ref {
  pairs: Pick<PairRecord, "prompts" | "winner_completions" | "loser_completions">[];
  texts: string[];
  token_ids: number[][];
  padded: { input_ids: number[][]; attention_mask: number[][] };
  scores: number[];
  single_scores: number[];
  loss: number;
  accuracy: number;
  margin: number;
  truncation: { text: string; max_length: number; input_ids: number[]; score: number };
}
const ref = JSON.parse(readFileSync(path.join(FIXTURES, "reward_model_reference.json"), "utf8")) as Ref;
const pairs: PairRecord[] = ref.pairs.map((p) => ({ ...p, winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 }));

// native and libtorch need the addons the install step builds; without one its cases skip, saying
// why, unless PBRL_REQUIRE_NATIVE=1 / PBRL_REQUIRE_LIBTORCH=1 (CI where they build) makes them fail.
const ADDONS = { native: loadNativeAddon(), libtorch: loadLibtorchAddon(nativeThreads()) };

describeEachBackend("joint reward model parity with PyTorch on $backend", ADDONS, (backend) => {
  let rm: JointRewardModel;
  beforeAll(async () => {
    await useBackend(backend);
    rm = await JointRewardModel.create({ source: TINY_LLAMA, headFile: path.join(FIXTURES, "reward_head.safetensors"), freezeBackbone: false });
  });
  afterAll(() => rm.dispose());

  it("joint texts and token ids match transformers' tokenizer", () => {
    const n = pairs.length;
    const inputs = [
      ...pairs.map((p) => ({ prompts: p.prompts, completions: p.winner_completions })),
      ...pairs.map((p) => ({ prompts: p.prompts, completions: p.loser_completions })),
    ];
    expect(inputs.map((x) => jointText(x.prompts, x.completions))).toEqual(ref.texts);
    expect(inputs.map((x) => rm.encode(x))).toEqual(ref.token_ids);
    const batch = padRows(ref.token_ids, rm.padTokenId, "right");
    expect(Array.from(batch.ids)).toEqual(ref.padded.input_ids.flat());
    expect(Array.from(batch.mask)).toEqual(ref.padded.attention_mask.flat());
    expect(ref.texts.length).toBe(2 * n);
  });

  it("scores within 1e-4, batched and one by one", () => {
    const inputs = [
      ...pairs.map((p) => ({ prompts: p.prompts, completions: p.winner_completions })),
      ...pairs.map((p) => ({ prompts: p.prompts, completions: p.loser_completions })),
    ];
    const batched = rm.scores(inputs, { batchSize: inputs.length });
    const single = rm.scores(inputs, { batchSize: 1 });
    const d1 = maxAbsDifference(batched, ref.scores);
    const d2 = maxAbsDifference(single, ref.single_scores);
    console.log(`[${backend}] score max |diff| batched ${d1.toExponential(2)}, single ${d2.toExponential(2)}`);
    expect(d1).toBeLessThanOrEqual(1e-4);
    expect(d2).toBeLessThanOrEqual(1e-4);
  });

  it("left truncation: the same ids as transformers with truncation_side='left', and the same score", () => {
    const ids = rm.encode(ref.truncation.text, ref.truncation.max_length);
    expect(ids).toEqual(ref.truncation.input_ids);
    expect(Math.abs(rm.scoreIds([ids])[0]! - ref.truncation.score)).toBeLessThanOrEqual(1e-4);
  });

  it("Bradley–Terry loss within 1e-5, head and backbone gradients within 1e-4", async () => {
    const winners = ref.token_ids.slice(0, pairs.length);
    const losers = ref.token_ids.slice(pairs.length);
    let diffs: Float32Array = new Float32Array(0);
    const { value, grads } = tf.variableGrads(() => {
      const r = rm.pairLoss(winners, losers);
      diffs = r.diffs;
      return r.loss;
    }, rm.trainableVariables());
    const lossDiff = Math.abs(value.dataSync()[0]! - ref.loss);
    expect(lossDiff).toBeLessThanOrEqual(1e-5);
    expect(Math.abs(diffs.reduce((a, b) => a + b, 0) / diffs.length - ref.margin)).toBeLessThanOrEqual(1e-4);
    expect(rm.evaluate(pairs)["reward/accuracy"]).toBeCloseTo(ref.accuracy, 6);

    const named = rm.gradsByWeightName(grads);
    const worst: Record<string, number> = {};
    for (const file of ["reward_grads_backbone.safetensors", "reward_grads_head.safetensors"]) {
      const want = await readSafetensors(path.join(FIXTURES, file));
      worst[file] = expectCloseToReference(named, want.tensors, 1e-4, { label: file, subset: true });
    }
    expect(named.size).toBe(rm.backbone.params.size + 2);
    console.log(
      `[${backend}] loss |diff| ${lossDiff.toExponential(2)}; grad max |diff| backbone ${worst["reward_grads_backbone.safetensors"]!.toExponential(2)}, head ${worst["reward_grads_head.safetensors"]!.toExponential(2)}`,
    );
    tf.dispose([value, ...named.values()]);
  });

  it("on a LoRA backbone (PEFT's adapter): Bradley–Terry loss within 1e-5, adapter and head gradients within 1e-4", async () => {
    const lora = JSON.parse(readFileSync(path.join(FIXTURES, "reward_lora_reference.json"), "utf8")) as { loss: number; scores: number[] };
    const backbone = await loadPretrained(path.join(MODEL_FIXTURES, "lora", "tiny-llama"), { baseModel: TINY_LLAMA });
    const lm = await JointRewardModel.create({ source: backbone, headFile: path.join(FIXTURES, "reward_head.safetensors"), freezeBackbone: false });
    backbone.model.dispose();
    try {
      expect(lm.backbone.adapter).toBeDefined();
      const { value, grads } = tf.variableGrads(
        () => lm.pairLoss(ref.token_ids.slice(0, pairs.length), ref.token_ids.slice(pairs.length)).loss,
        lm.trainableVariables(),
      );
      expect(Math.abs(value.dataSync()[0]! - lora.loss)).toBeLessThanOrEqual(1e-5);
      const named = lm.gradsByWeightName(grads);
      expectCloseToReference(named, (await readSafetensors(path.join(FIXTURES, "reward_lora_grads.safetensors"))).tensors, 1e-4, {
        label: "LoRA reward model gradients",
      });
      tf.dispose([value, ...named.values()]);
    } finally {
      lm.dispose();
    }
  });
});

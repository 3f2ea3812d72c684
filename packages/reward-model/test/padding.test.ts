// The last-non-pad-token rule: a row's reward is read at its last real token whatever the padding
// side, so a row scores the same alone, right-padded and left-padded in a batch. CoMLRL reads
// position sum(mask) − 1, which is only right for right padding; the tests below show that rule
// would give other scores here, so they can tell the two apart.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { assertNoTensorLeak, RngStream, tf } from "@pbrl/core-tensor";
import { JointRewardModel, padRows, type JointInput, type PaddedBatch } from "../src/index.js";
import { TINY_LLAMA, TINY_QWEN2 } from "./helpers.js";

const maxAbs = (a: readonly number[], b: readonly number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

/** Inputs of clearly different token lengths, so every batch has real padding. */
const INPUTS: JointInput[] = [
  {
    prompts: ["Write a greeting.", "Add a farewell."],
    completions: ["Hello there, my good friend, how are you today?", "Goodbye and take care, see you soon."],
  },
  { prompts: ["Sum 2 and 3.", "Check."], completions: ["5", "ok"] },
  { prompts: ["Name a city.", "Describe it."], completions: ["Zürich", "A calm city by a lake, with old streets."] },
  { prompts: ["Hi", "Yo"], completions: ["a", "b"] },
];

/** CoMLRL's pooling position, sum(mask) − 1, as flat indices. */
function comlrlLastRows(batch: PaddedBatch): Int32Array {
  return Int32Array.from({ length: batch.batch }, (_, b) => {
    let n = 0;
    for (let i = 0; i < batch.length; i++) n += batch.mask[b * batch.length + i]!;
    return b * batch.length + Math.max(n, 1) - 1;
  });
}

function scoresAt(rm: JointRewardModel, batch: PaddedBatch): number[] {
  const s = tf.tidy(() => rm.head.apply(rm.lastHidden(batch)));
  const out = Array.from(s.dataSync());
  s.dispose();
  return out;
}

describe("padRows", () => {
  it("puts padding on the requested side and finds each row's last real token from the mask", () => {
    const right = padRows([[5, 6, 7], [8]], 0, "right");
    expect(Array.from(right.ids)).toEqual([5, 6, 7, 8, 0, 0]);
    expect(Array.from(right.mask)).toEqual([1, 1, 1, 1, 0, 0]);
    expect(Array.from(right.lastRows)).toEqual([2, 3]);
    const left = padRows([[5, 6, 7], [8]], 0, "left");
    expect(Array.from(left.ids)).toEqual([5, 6, 7, 0, 0, 8]);
    expect(Array.from(left.mask)).toEqual([1, 1, 1, 0, 0, 1]);
    expect(Array.from(left.lastRows)).toEqual([2, 5]);
    expect(Array.from(left.positions)).toEqual([0, 1, 2, 0, 0, 0]);
  });

  it("a real token equal to the pad id stays real: the mask comes from row lengths, never from the ids", () => {
    const b = padRows([[3, 9], [9]], 9, "right");
    expect(Array.from(b.mask)).toEqual([1, 1, 1, 0]);
    expect(Array.from(b.lastRows)).toEqual([1, 2]);
    const l = padRows([[3, 9], [9]], 9, "left");
    expect(Array.from(l.mask)).toEqual([1, 1, 0, 1]);
    expect(Array.from(l.lastRows)).toEqual([1, 3]);
  });

  it("rejects an empty batch and an empty row", () => {
    expect(() => padRows([], 0, "right")).toThrow(/batch is empty/);
    expect(() => padRows([[1], []], 0, "left")).toThrow(/row 1 has no tokens/);
  });
});

describe.each([
  ["tiny-llama (pad 0, eos 2, BOS added)", TINY_LLAMA],
  ["tiny-qwen2 (pad = eos = 381)", TINY_QWEN2],
])("last non-pad token on %s", (_label, dir) => {
  let rm: JointRewardModel;
  let rows: number[][];
  let alone: number[];
  beforeEach(async () => {
    rm = await JointRewardModel.create({ source: dir, rng: RngStream.fromSeed(5, "head") });
    rows = INPUTS.map((x) => rm.encode(x));
    alone = rm.scoreIds(rows, { batchSize: 1 });
  });
  afterEach(() => rm.dispose());

  it("right- and left-padded batches give each row its one-by-one score", () => {
    const lengths = rows.map((r) => r.length);
    expect(Math.max(...lengths) - Math.min(...lengths)).toBeGreaterThan(10);
    const right = rm.scoreIds(rows, { batchSize: rows.length, paddingSide: "right" });
    const left = rm.scoreIds(rows, { batchSize: rows.length, paddingSide: "left" });
    expect(maxAbs(right, alone)).toBeLessThanOrEqual(1e-5);
    expect(maxAbs(left, alone)).toBeLessThanOrEqual(1e-5);
    // The joint inputs really score differently, so equal scores mean the right position was read.
    expect(Math.max(...alone) - Math.min(...alone)).toBeGreaterThan(1e-3);
    // `scores` (text in, the same rule) agrees, whatever the batch size and side.
    expect(maxAbs(rm.scores(INPUTS, { batchSize: 3, paddingSide: "left" }), alone)).toBeLessThanOrEqual(1e-5);
  });

  it("CoMLRL's sum(mask) − 1 position would be wrong for left padding (so the test above can fail)", () => {
    const left = padRows(rows, rm.padTokenId, "left");
    const wrong = scoresAt(rm, { ...left, lastRows: comlrlLastRows(left) });
    const shortest = rows.findIndex((r) => r.length === Math.min(...rows.map((x) => x.length)));
    expect(Math.abs(wrong[shortest]! - alone[shortest]!)).toBeGreaterThan(1e-3);
    // …and the same as ours for right padding.
    const right = padRows(rows, rm.padTokenId, "right");
    expect(maxAbs(scoresAt(rm, { ...right, lastRows: comlrlLastRows(right) }), alone)).toBeLessThanOrEqual(1e-5);
  });

  it("scoring runs without gradients and leaves no tensors behind", async () => {
    rm.scores(INPUTS.slice(0, 2)); // warm-up: first calls may build caches
    await assertNoTensorLeak("scores", () => rm.scores(INPUTS, { batchSize: 3, paddingSide: "left" }));
    await assertNoTensorLeak("scoreIds", () => rm.scoreIds(rows, { paddingSide: "right" }));
  });
});

describe("a real token equal to the pad id (tiny-qwen2: pad = eos = <|endoftext|>)", () => {
  let rm: JointRewardModel;
  beforeEach(async () => {
    rm = await JointRewardModel.create({ source: TINY_QWEN2, rng: RngStream.fromSeed(6, "head") });
  });
  afterEach(() => rm.dispose());

  it("a response that ends with EOS is read at that EOS, padded on either side", () => {
    const withEos: JointInput = { prompts: ["Name a colour.", "Say why."], completions: ["Blue", "It is calm.<|endoftext|>"] };
    const withoutEos: JointInput = { prompts: withEos.prompts, completions: ["Blue", "It is calm."] };
    const ids = rm.encode(withEos);
    expect(rm.padTokenId).toBe(381);
    expect(ids.at(-1)).toBe(rm.padTokenId);
    expect(rm.encode(withoutEos)).toEqual(ids.slice(0, -1));

    const batch = [withEos, INPUTS[0]!, withoutEos, INPUTS[3]!];
    const alone = rm.scores(batch, { batchSize: 1 });
    expect(maxAbs(rm.scores(batch, { batchSize: 4, paddingSide: "right" }), alone)).toBeLessThanOrEqual(1e-5);
    expect(maxAbs(rm.scores(batch, { batchSize: 4, paddingSide: "left" }), alone)).toBeLessThanOrEqual(1e-5);
    // The EOS is part of what is scored: dropping it (as a rule "last token ≠ pad id" would) changes the score.
    expect(Math.abs(alone[0]! - alone[2]!)).toBeGreaterThan(1e-4);
  });
});

// LibtorchDecoder's shared prompts: rows of one prompt attend to a single copy of its keys and
// values. Giving every row its own copy of the same prompt (one "prompt" per row) must give the
// same logits, step after step, and the decoder refuses a row-to-prompt map or prompt cache that
// does not fit. Generation through it is tested in @pbrl/models (generate.test.ts, every backend).
// Skips, naming why, when the addon is not built; with PBRL_REQUIRE_LIBTORCH=1 a missing addon fails.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LibtorchDecoder, loadLibtorchAddon, nativeThreads, tf, useBackend, type DecodeDims } from "../src/index.js";
import { rand } from "./compare-backends.js";

const load = loadLibtorchAddon(nativeThreads());
const missing = load.ok || process.env["PBRL_REQUIRE_LIBTORCH"] === "1" ? undefined : load.reason;

const dims: DecodeDims = { hidden: 8, heads: 4, kvHeads: 2, headDim: 2, intermediate: 6, vocab: 11, layers: 2, rmsNormEps: 1e-6 };
const PROMPT = 5;
const CAPACITY = PROMPT + 4;

describe.skipIf(missing !== undefined)("LibtorchDecoder with shared prompts", () => {
  let previous = "";
  let weights: (tf.Tensor | undefined)[] = [];
  beforeAll(async () => {
    previous = tf.getBackend();
    await useBackend("libtorch");
    const { hidden: h, heads, kvHeads, headDim: d, intermediate: i, vocab: v } = dims;
    let seed = 1;
    const w = (shape: number[]) => tf.mul(rand(shape, seed++), 0.5);
    weights = [w([v, h]), tf.ones([h]), w([v, h])];
    for (let l = 0; l < dims.layers; l++) {
      // inputNorm, q, k, v, o, 4 absent biases, postNorm, gate, up, down, 3 absent biases (nativeDecodeStep's order).
      weights.push(tf.ones([h]), w([heads * d, h]), w([kvHeads * d, h]), w([kvHeads * d, h]), w([h, heads * d]), undefined, undefined, undefined, undefined);
      weights.push(tf.ones([h]), w([i, h]), w([i, h]), w([h, i]), undefined, undefined, undefined);
    }
  });
  afterAll(async () => {
    tf.dispose(weights.filter((t): t is tf.Tensor => t !== undefined));
    await useBackend(previous as "libtorch");
  });

  /** Runs 3 steps of rows 0..3 (rows 0–2 answer prompt 0, row 3 prompt 1) and returns each step's logits. */
  const run = (rowPrompt: number[], promptOfCacheRow: number[]): Float32Array[] => {
    const decoder = new LibtorchDecoder(weights, dims, Int32Array.from(rowPrompt), CAPACITY);
    try {
      for (let l = 0; l < dims.layers; l++) {
        // Two distinct prompts' keys and values per layer; a cache row per prompt index in promptOfCacheRow.
        const both = [0, 1].map((p) => rand([1, dims.kvHeads, PROMPT, dims.headDim], 100 + 10 * l + p));
        const k = tf.concat(promptOfCacheRow.map((p) => both[p]!));
        const v = tf.concat(promptOfCacheRow.map((p) => tf.mul(both[p]!, -0.7)));
        decoder.load(l, k, v, PROMPT);
        tf.dispose([...both, k, v]);
      }
      const steps: Float32Array[] = [];
      for (let s = 0; s < 3; s++) {
        const rows = 4;
        const cos = Float32Array.from({ length: rows * dims.headDim }, (_, j) => Math.cos(0.3 * (PROMPT + s) + j));
        const sin = Float32Array.from({ length: rows * dims.headDim }, (_, j) => Math.sin(0.3 * (PROMPT + s) + j));
        // Row 3 does not see position 0 (as a left-padded prompt would not).
        const mask = Uint8Array.from({ length: rows * (PROMPT + s + 1) }, (_, j) => (j === 3 * (PROMPT + s + 1) ? 0 : 1));
        const logits = decoder.step(
          Int32Array.from([1, 2, 3, 4], (t) => (t + s) % dims.vocab),
          cos,
          sin,
          mask,
        );
        steps.push(logits.dataSync() as Float32Array);
        logits.dispose();
      }
      return steps;
    } finally {
      decoder.dispose();
    }
  };

  it("gives the logits of rows that each hold their own copy of the prompt", () => {
    const shared = run([0, 0, 0, 1], [0, 1]);
    const copied = run([0, 1, 2, 3], [0, 0, 0, 1]);
    expect(shared).toHaveLength(3);
    for (let s = 0; s < 3; s++) {
      let worst = 0;
      shared[s]!.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - copied[s]![j]!))));
      expect(worst, `step ${s}`).toBeLessThan(1e-5);
      // Rows 0 and 1 share a prompt but not their tokens: their logits differ.
      expect(Array.from(shared[s]!.subarray(0, dims.vocab))).not.toEqual(Array.from(shared[s]!.subarray(dims.vocab, 2 * dims.vocab)));
    }
  });

  it("refuses a row-to-prompt map that does not start at 0 or skips a prompt, and a prompt cache of another count", () => {
    expect(() => new LibtorchDecoder(weights, dims, Int32Array.from([1, 1]), CAPACITY)).toThrow(/rowPrompt must start at 0 and grow by at most 1/);
    expect(() => new LibtorchDecoder(weights, dims, Int32Array.from([0, 2]), CAPACITY)).toThrow(/rowPrompt must start at 0 and grow by at most 1/);
    const decoder = new LibtorchDecoder(weights, dims, Int32Array.from([0, 0, 1]), CAPACITY);
    const k = rand([3, dims.kvHeads, PROMPT, dims.headDim], 7);
    try {
      const one = Int32Array.from([1, 1, 1]);
      const table = new Float32Array(3 * dims.headDim);
      expect(() => decoder.step(one, table, table, new Uint8Array(3 * (PROMPT + 1)))).toThrow(/no prompt loaded/);
      expect(() => decoder.load(0, k, k, PROMPT)).toThrow(/must be \[2 prompts, kvHeads, length, headDim\]/);
      expect(() => decoder.load(0, k, k, CAPACITY)).toThrow(/do not leave room below the capacity/);
    } finally {
      k.dispose();
      decoder.dispose();
    }
  });
});

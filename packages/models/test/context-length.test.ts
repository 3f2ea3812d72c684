// A generation longer than the model's context (tiny-llama: max_position_embeddings 256) stops
// before any KV cache is allocated with a ContextLengthError naming the prompt length,
// max_new_tokens, the limit and the fix — not a RangeError from an allocation or a native crash.
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream, tf } from "@pbrl/core-tensor";
import { checkContextLength, ContextLengthError, generate, loadPretrained, type Pretrained } from "../src/index.js";
import { FIXTURES } from "./reference.js";

describe("generation within the model's context", () => {
  let p: Pretrained;
  beforeAll(async () => {
    p = await loadPretrained(path.join(FIXTURES, "tiny-llama"));
  });
  afterAll(() => p.model.dispose());

  const errorOf = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (e) {
      return e;
    }
    return undefined;
  };

  it.each<[string, { maxNewTokens: number; numReturnSequences?: number; useCache?: boolean }, number]>([
    ["max_new_tokens=1e12", { maxNewTokens: 1e12 }, 4],
    ["max_new_tokens=1e12 with 100000 sequences (the length is the cause, not the memory)", { maxNewTokens: 1e12, numReturnSequences: 100_000 }, 4],
    ["one token past the limit", { maxNewTokens: 253 }, 4],
    ["one token past the limit, without the cache", { maxNewTokens: 253, useCache: false }, 4],
  ])("%s is a ContextLengthError up front", (_name, options, promptLength) => {
    const tensors = tf.memory().numTensors;
    const err = errorOf(() => generate(p.model, [[1, 5, 9, 4]], { ...options, temperature: 1, rng: RngStream.fromSeed(0, "ctx") }));
    expect(err).toBeInstanceOf(ContextLengthError);
    expect(err).toBeInstanceOf(RangeError);
    const e = err as ContextLengthError;
    expect(e.message).toBe(
      `a ${promptLength}-token prompt plus max_new_tokens=${options.maxNewTokens} needs ${promptLength + options.maxNewTokens} positions, ` +
        `more than this model's max_position_embeddings (256); set max_new_tokens to at most 252, or shorten the prompts (max_prompt_length)`,
    );
    expect(e.details).toEqual({ promptLength, maxNewTokens: options.maxNewTokens, maxPositionEmbeddings: 256 });
    expect(tf.memory().numTensors).toBe(tensors);
  });

  it("the longest of padded prompts counts, and a prompt as long as the context asks for shorter prompts", () => {
    const long = Array.from({ length: 256 }, (_, i) => 3 + (i % 50));
    const err = errorOf(() => generate(p.model, [[1, 2], long], { maxNewTokens: 1, greedy: true, padTokenId: 0 }));
    expect(err).toBeInstanceOf(ContextLengthError);
    expect((err as Error).message).toBe(
      "a 256-token prompt plus max_new_tokens=1 needs 257 positions, more than this model's max_position_embeddings (256); shorten the prompts (max_prompt_length) to fewer than 256 tokens, leaving room for max_new_tokens",
    );
  });

  it("exactly the context is allowed, and generation still works after a refusal", () => {
    expect(() => checkContextLength(p.model.config, 4, 252)).not.toThrow();
    expect(() => checkContextLength(p.model.config, 4, 253)).toThrow(ContextLengthError);
    const out = generate(p.model, [Array.from({ length: 250 }, (_, i) => 3 + (i % 50))], { maxNewTokens: 6, greedy: true });
    expect(out[0]!.tokens).toHaveLength(6);
  });
});

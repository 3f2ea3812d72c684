// Issue 28: a prompt too long for the model's context is known by its length in bytes, before it is
// tokenized (a 100 MB single-line prompt took 5 minutes and 3.6 GB to tokenize before its error).
// tiny Llama: max_position_embeddings=256, longest token 12 bytes as its vocabulary writes it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type Pretrained, type Tokenizer } from "@pbrl/models";
import {
  CUT_MARGIN_TOKENS,
  encodePromptText,
  PolicySampler,
  PromptTooLongError,
  textTailWithinBytes,
  type GenerationSettings,
  type Policy,
} from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

let loaded: Pretrained;
let tokenizer: Tokenizer;
/** What the tokenizer was asked to encode, by length. */
const encoded: number[] = [];
let policy: Policy;
const settings: GenerationSettings = { maxNewTokens: 4, temperature: 1, topP: 1, topK: null, maxBatchRows: 8 };
const HUGE = "the cat sat on the mat ".repeat(Math.ceil((100 * 2 ** 20) / 23)).slice(0, 100 * 2 ** 20);

beforeAll(async () => {
  loaded = await loadPretrained(TINY_LLAMA);
  tokenizer = loaded.tokenizer!;
  // The real tokenizer, with a record of the texts it encodes.
  const recording = new Proxy(tokenizer, {
    get(target, key) {
      if (key === "encode") return (text: string, o?: { addSpecialTokens?: boolean }) => (encoded.push(text.length), target.encode(text, o));
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  policy = { model: loaded.model, tokenizer: recording, eosTokenIds: [2], padTokenId: 0 };
});
afterAll(() => loaded.model.dispose());

describe("a prompt of more bytes than the context can hold", () => {
  it("100 MB on a single line: a PromptTooLongError within seconds, naming the item, its length, the context and the fix, before any tokenizing", () => {
    expect(tokenizer.longestTokenBytes).toBe(12);
    encoded.length = 0;
    const start = performance.now();
    const err = (() => {
      try {
        new PolicySampler([policy], settings, RngStream.fromSeed(0, "p")).sample([[HUGE]], 1, [7]);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    const seconds = (performance.now() - start) / 1000;
    console.log(`a ${HUGE.length}-byte prompt was refused in ${seconds.toFixed(3)} s`);
    expect(err).toBeInstanceOf(PromptTooLongError);
    expect(err).toMatchObject({ itemIndex: 7, agent: 0, promptBytes: 104857600, promptTokens: 8738134, maxPositionEmbeddings: 256 });
    expect((err as Error).message).toBe(
      "item 7: agent 0's prompt is 104857600 bytes (UTF-8), so at least 8738134 tokens (this tokenizer's longest token is 12 bytes): more than the model's context holds (max_position_embeddings=256); set max_prompt_length (at most 252 with max_new_tokens=4) to cut long prompts from the left (only a prompt's end is then tokenized), or shorten the prompt (its formatter, or the item)",
    );
    expect(encoded).toEqual([]);
    expect(seconds).toBeLessThan(5);
  });

  it("100 MB with max_prompt_length: only its end is tokenized, within seconds", () => {
    encoded.length = 0;
    const start = performance.now();
    const s = new PolicySampler([policy], { ...settings, maxPromptLength: 16 }, RngStream.fromSeed(0, "p")).sample([[HUGE]], 1)[0]![0];
    const seconds = (performance.now() - start) / 1000;
    console.log(`a ${HUGE.length}-byte prompt was cut to max_prompt_length=16 and sampled in ${seconds.toFixed(3)} s`);
    expect(s!.promptIds).toEqual(tokenizer.encode(HUGE.slice(-200)).slice(-16));
    expect(Math.max(...encoded)).toBeLessThanOrEqual((16 + CUT_MARGIN_TOKENS) * 12);
    expect(seconds).toBeLessThan(10);
  });

  it("the tokens max_prompt_length keeps of a cut prompt are the whole text's, where the cut falls inside a word", () => {
    const words = ["children", "return", "parents", "while", "Question", "time", "upon", "their", "child", "Numbers"];
    let text = Array.from({ length: 1600 }, (_, i) => words[(i * 7 + (i >> 3)) % words.length]).join(" ");
    const cutBytes = (16 + CUT_MARGIN_TOKENS) * 12;
    // Make the plain byte cut fall inside a word: its first tokens then differ from the whole text's there.
    while (!/\w\w/.test(text.slice(-cutBytes - 1, -cutBytes + 1))) text += "s";
    expect(Buffer.byteLength(text)).toBeGreaterThan(256 * 12);
    const whole = encodePromptText(tokenizer, text);
    const plainCut = tokenizer.encode(textTailWithinBytes(text, cutBytes), { addSpecialTokens: false });
    expect(whole.slice(-plainCut.length)).not.toEqual(plainCut); // the cut matters at its start
    encoded.length = 0;
    const s = new PolicySampler([policy], { ...settings, maxPromptLength: 16 }, RngStream.fromSeed(0, "p")).sample([[text]], 1)[0]![0];
    expect(Math.max(...encoded)).toBeLessThan(cutBytes);
    expect(s!.promptIds).toEqual(whole.slice(-16));
  });

  it("a prompt within the bound is tokenized whole, as before", () => {
    const text = "The cat sat on the mat. ".repeat(100); // 2400 bytes < 256 × 12
    encoded.length = 0;
    const s = new PolicySampler([policy], { ...settings, maxPromptLength: 16 }, RngStream.fromSeed(0, "p")).sample([[text]], 1)[0]![0];
    expect(encoded).toContain(text.length);
    expect(s).toMatchObject({ promptIds: encodePromptText(tokenizer, text).slice(-16), truncatedFrom: encodePromptText(tokenizer, text).length });
  });

  it("a cut never splits a character", () => {
    expect(textTailWithinBytes("aé😀b", 1)).toBe("b");
    expect(textTailWithinBytes("aé😀b", 4)).toBe("b");
    expect(textTailWithinBytes("aé😀b", 5)).toBe("😀b");
    expect(textTailWithinBytes("aé😀b", 7)).toBe("é😀b");
    expect(textTailWithinBytes("aé😀b", 99)).toBe("aé😀b");
  });
});

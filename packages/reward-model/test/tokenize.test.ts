// encodeKeepEnd on word-level tokenizers built here from a tokenizer.json (one id per word, so
// every expected row can be read off the vocabulary), each with another post-processor template.
import { describe, expect, it } from "vitest";
import { Tokenizer } from "@pbrl/models";
import { encodeKeepEnd } from "../src/index.js";

const VOCAB: Record<string, number> = { "<unk>": 0, a: 1, b: 2, c: 3, d: 4, e: 5, "<s>": 6, "</s>": 7 };

/** A word-level tokenizer whose post-processor lays out one sequence as `template` ("$A" is the text). */
function wordTokenizer(template: string[]): Tokenizer {
  const special = ["<s>", "</s>"];
  const json = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: special.map((t) => ({ id: VOCAB[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: "Whitespace" },
    post_processor: {
      type: "TemplateProcessing",
      single: template.map((x) => (x === "$A" ? { Sequence: { id: "A", type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
      pair: [],
      special_tokens: Object.fromEntries(special.map((t) => [t, { id: t, ids: [VOCAB[t]], tokens: [t] }])),
    },
    decoder: null,
    model: { type: "WordLevel", vocab: VOCAB, unk_token: "<unk>" },
  };
  return new Tokenizer({ "tokenizer.json": JSON.stringify(json) });
}

const TEXT = "a b c d e"; // ids 1 2 3 4 5

describe("encodeKeepEnd keeps the special tokens and the end of the text", () => {
  it("BOS and EOS: the content between them is cut from the left", () => {
    const tok = wordTokenizer(["<s>", "$A", "</s>"]);
    expect(tok.encode(TEXT)).toEqual([6, 1, 2, 3, 4, 5, 7]);
    expect(encodeKeepEnd(tok, TEXT, 7)).toEqual([6, 1, 2, 3, 4, 5, 7]);
    expect(encodeKeepEnd(tok, TEXT, 8)).toEqual([6, 1, 2, 3, 4, 5, 7]);
    // 5 = 1 BOS + 1 EOS + room for the last 3 words (c d e).
    expect(encodeKeepEnd(tok, TEXT, 5)).toEqual([6, 3, 4, 5, 7]);
    // 3 = BOS + EOS + the last word.
    expect(encodeKeepEnd(tok, TEXT, 3)).toEqual([6, 5, 7]);
    expect(() => encodeKeepEnd(tok, TEXT, 2)).toThrow(
      new RangeError("max length 2 leaves no room for text: the tokenizer adds 2 special token(s) to every sequence"),
    );
  });

  it("EOS only: the kept words come first, then EOS; no room for a word is an error", () => {
    const tok = wordTokenizer(["$A", "</s>"]);
    expect(encodeKeepEnd(tok, TEXT, 3)).toEqual([4, 5, 7]);
    expect(() => encodeKeepEnd(tok, TEXT, 1)).toThrow(
      new RangeError("max length 1 leaves no room for text: the tokenizer adds 1 special token(s) to every sequence"),
    );
  });

  it("a post-processor whose output does not hold the plain encoding as one run: the last tokens", () => {
    // "$A <s> $A": with special tokens a b c d e <s> a b c d e; without, a b c d e a b c d e,
    // which is no run of the first.
    const tok = wordTokenizer(["$A", "<s>", "$A"]);
    expect(tok.encode(TEXT)).toEqual([1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5]);
    expect(encodeKeepEnd(tok, TEXT, 7)).toEqual([5, 6, 1, 2, 3, 4, 5]);
    expect(encodeKeepEnd(tok, TEXT, 1)).toEqual([5]);
  });

  it("a repeated word: the run is found where the whole body matches, not at a partial match", () => {
    // "<s> $A </s>" on "a a b": full <s> a a b </s>; body a a b starts at 1.
    const tok = wordTokenizer(["<s>", "$A", "</s>"]);
    expect(encodeKeepEnd(tok, "a a b", 4)).toEqual([6, 1, 2, 7]);
  });
});

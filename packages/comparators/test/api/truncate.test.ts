import { describe, expect, it } from "vitest";
import { truncateToTokens, type ApiTokenizer } from "../../src/api/truncate.js";

// One token per character (its char code): the budget in tokens is the budget in characters.
const perChar: ApiTokenizer = {
  encode: (text) => [...text].map((c) => c.charCodeAt(0)),
  decode: (ids) => String.fromCharCode(...ids),
};

/**
 * One token per `size` characters from the start, the last one shorter: a prefix cut inside a
 * chunk ends in a token the whole text does not have, as merges across a real tokenizer's cut do.
 * Every call is recorded: how many characters each encode call was given, and with which options.
 */
function chunked(size: number) {
  const vocab: string[] = [];
  const calls: { encoded: number[]; options: unknown[] } = { encoded: [], options: [] };
  const tokenizer: ApiTokenizer = {
    encode(text, options) {
      calls.encoded.push(text.length);
      calls.options.push(options);
      const ids: number[] = [];
      for (let i = 0; i < text.length; i += size) ids.push(vocab.push(text.slice(i, i + size)) - 1);
      return ids;
    },
    decode(ids, options) {
      calls.options.push(options);
      return ids.map((id) => vocab[id]!).join("");
    },
  };
  return { tokenizer, calls };
}

describe("truncateToTokens", () => {
  it("gives back a text exactly at the budget unchanged, and cuts one token over it", () => {
    expect(truncateToTokens("abcdefghij", perChar, 10)).toEqual({ text: "abcdefghij", truncated: false });
    expect(truncateToTokens("abcdefghijk", perChar, 10)).toEqual({ text: "abcdefghij", truncated: true });
  });

  it("cuts a text far longer than the first prefix tried to the budget's first tokens", () => {
    const text = "xy".repeat(5000); // 10000 tokens; the first prefix tried holds max(256, 100 * 16) = 1600
    expect(truncateToTokens(text, perChar, 100)).toEqual({ text: "xy".repeat(50), truncated: true });
    expect(truncateToTokens(text, perChar, 3)).toEqual({ text: "xyx", truncated: true });
  });

  it("encodes prefixes of max(256, 16 per token) characters, growing 4×, until one holds more than budget + 8 tokens", () => {
    const text = "abcdefghijklmnopq".repeat(2000); // 34000 characters
    // 17 characters a token: the 1600-character prefix holds 95 tokens (the last one cut), too few to trust
    const long = chunked(17);
    expect(truncateToTokens(text, long.tokenizer, 100)).toEqual({ text: text.slice(0, 1700), truncated: true });
    expect(long.calls.encoded).toEqual([1600, 6400, 1700]); // the last: the cut text encoded again
    // a small budget starts at 256 characters: 26 tokens of 10, more than 10 + 8
    const small = chunked(10);
    expect(truncateToTokens(text, small.tokenizer, 10)).toEqual({ text: text.slice(0, 100), truncated: true });
    expect(small.calls.encoded).toEqual([256, 100]);
    // exactly budget + 8 tokens in the prefix is not yet enough
    const edge = chunked(15); // 256 characters: 18 tokens
    expect(truncateToTokens(text, edge.tokenizer, 10)).toEqual({ text: text.slice(0, 150), truncated: true });
    expect(edge.calls.encoded).toEqual([256, 1024, 150]);
  });

  it("encodes a text no longer than the prefix whole, once, and never a slice past it", () => {
    // a budget of 16 tokens or fewer tries 256 characters first: the whole of this text
    const fits = chunked(16);
    expect(truncateToTokens("a".repeat(256), fits.tokenizer, 16)).toEqual({ text: "a".repeat(256), truncated: false });
    expect(fits.calls.encoded).toEqual([256]);
    const over = chunked(16);
    expect(truncateToTokens("a".repeat(256), over.tokenizer, 15)).toEqual({ text: "a".repeat(240), truncated: true });
    expect(over.calls.encoded).toEqual([256, 240]);
  });

  it("adds no special tokens and keeps those the text spells", () => {
    const { tokenizer, calls } = chunked(4);
    truncateToTokens("abcdefghij", tokenizer, 2);
    expect(calls.options).toEqual([{ addSpecialTokens: false }, { skipSpecialTokens: false }, { addSpecialTokens: false }]);
    // a tokenizer that adds a BOS unless told not to, and drops special ids unless told to keep them
    const BOS = 1;
    const special: ApiTokenizer = {
      encode: (text, o) => [...(o?.addSpecialTokens === false ? [] : [BOS]), ...[...text].map((c) => c.charCodeAt(0))],
      decode: (ids, o) => String.fromCharCode(...ids.filter((id) => o?.skipSpecialTokens === false || id > 2)),
    };
    expect(truncateToTokens("\u0002abc", special, 4)).toEqual({ text: "\u0002abc", truncated: false });
    expect(truncateToTokens("\u0002abcd", special, 3)).toEqual({ text: "\u0002ab", truncated: true });
  });

  it("backs off from the cut until the decoded text re-encodes within the budget", () => {
    // "ab" decodes to "Z", which encodes as three tokens: the cut moves back before it
    const merging: ApiTokenizer = {
      encode: (text) => [...text].flatMap((c) => (c === "Z" ? [1, 1, 1] : [c.charCodeAt(0)])),
      decode: (ids) => String.fromCharCode(...ids).replaceAll("ab", "Z"),
    };
    expect(truncateToTokens("xabx", merging, 3)).toEqual({ text: "xa", truncated: true });
    expect(truncateToTokens("xyabx", merging, 3)).toEqual({ text: "xya", truncated: true });
    // a tokenizer whose every single token decodes to text of two tokens: nothing fits a budget of one
    const doubling: ApiTokenizer = { encode: (text) => [...text].map(() => 0), decode: (ids) => "xx".repeat(ids.length) };
    expect(truncateToTokens("abc", doubling, 1)).toEqual({ text: "", truncated: true });
  });
});

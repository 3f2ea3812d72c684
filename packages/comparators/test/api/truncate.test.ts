import { describe, expect, it } from "vitest";
import { truncateToTokens, type ApiTokenizer } from "../../src/api/truncate.js";

// One token per character (its char code): the budget in tokens is the budget in characters.
const perChar: ApiTokenizer = {
  encode: (text) => [...text].map((c) => c.charCodeAt(0)),
  decode: (ids) => String.fromCharCode(...ids),
};

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
});

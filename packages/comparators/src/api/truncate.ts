/**
 * Holding remote completions to the agents' token budget: a completion longer than max_new_tokens
 * tokens of the agent's tokenizer is cut to that many, as the agent's own generation would be.
 */

/** What truncation needs of an agent's tokenizer (@pbrl/models' Tokenizer fits). */
export interface ApiTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
}

export interface Truncated {
  text: string;
  /** Whether the text was longer than the budget and was cut. */
  truncated: boolean;
}

/**
 * Tokens past the budget that a prefix must hold before its tokens are trusted to be those of
 * the whole text: merges across the cut only change the last few.
 */
const BOUNDARY_TOKENS = 8;

/** Characters of the first prefix tried, per token of budget: most tokens are far shorter. */
const CHARS_PER_TOKEN_GUESS = 16;

/**
 * `text` cut to at most `maxTokens` tokens of `tokenizer` (special tokens in the text count as
 * the text spells them, none are added). A text within the budget comes back unchanged.
 *
 * A hostile server can send megabytes; encoding all of it to keep the first 256 tokens would
 * take seconds, so growing prefixes are encoded until one holds more tokens than the budget.
 */
export function truncateToTokens(text: string, tokenizer: ApiTokenizer, maxTokens: number): Truncated {
  let chars = Math.max(256, maxTokens * CHARS_PER_TOKEN_GUESS);
  for (;;) {
    const whole = chars >= text.length;
    const ids = tokenizer.encode(whole ? text : text.slice(0, chars), { addSpecialTokens: false });
    if (whole && ids.length <= maxTokens) return { text, truncated: false };
    if (whole || ids.length > maxTokens + BOUNDARY_TOKENS) return { text: decodeWithin(ids, tokenizer, maxTokens), truncated: true };
    chars *= 4;
  }
}

/**
 * The longest decoded prefix of `ids` that re-encodes to at most `maxTokens` tokens: decoding and
 * encoding again can merge differently at the cut, and the trainer encodes the text again.
 */
function decodeWithin(ids: readonly number[], tokenizer: ApiTokenizer, maxTokens: number): string {
  // Stryker disable next-line EqualityOperator: k >= 0 also tries k = 0, the empty text, which re-encodes to no tokens and returns "" as the fallback below does
  for (let k = Math.min(maxTokens, ids.length); k > 0; k--) {
    const text = tokenizer.decode(ids.slice(0, k), { skipSpecialTokens: false });
    if (tokenizer.encode(text, { addSpecialTokens: false }).length <= maxTokens) return text;
  }
  return "";
}

import type { Tokenizer } from "@pbrl/models";

/**
 * Token ids of `text` as the tokenizer encodes it by default (special tokens added), at most
 * `maxLength` of them. Truncation keeps the END of the text: a joint text ends with the
 * responses, which are what the reward must judge, while CoMLRL truncates on the right and can
 * cut them off. Special tokens the post-processor adds (a BOS prefix, an EOS suffix) are kept
 * and the content between them is cut from the left, exactly as transformers does with
 * `truncation_side="left"`.
 */
export function encodeKeepEnd(tokenizer: Tokenizer, text: string, maxLength: number | undefined): number[] {
  const full = tokenizer.encode(text);
  const limit = maxLength ?? Infinity;
  // Stryker disable next-line EqualityOperator: `<` instead: at full.length === limit the cut below keeps room = body.length tokens, which is full again
  if (full.length <= limit) return full;
  const body = tokenizer.encode(text, { addSpecialTokens: false });
  const at = findRun(full, body);
  if (at < 0) return full.slice(full.length - limit); // a post-processor that rewrites content: keep the last tokens
  const prefix = full.slice(0, at);
  const suffix = full.slice(at + body.length);
  const room = limit - prefix.length - suffix.length;
  if (room < 1) {
    throw new RangeError(`max length ${limit} leaves no room for text: the tokenizer adds ${prefix.length + suffix.length} special token(s) to every sequence`);
  }
  return [...prefix, ...body.slice(body.length - room), ...suffix];
}

/** Index where `part` occurs inside `whole`, or −1. */
function findRun(whole: readonly number[], part: readonly number[]): number {
  // Stryker disable next-line ArithmeticOperator: k − part.length only lets k run past the last start where part fits; whole[k + j] is undefined there, never an id, so the result is the same
  outer: for (let k = 0; k + part.length <= whole.length; k++) {
    for (let j = 0; j < part.length; j++) if (whole[k + j] !== part[j]) continue outer;
    return k;
  }
  return -1;
}

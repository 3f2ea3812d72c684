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
  if (maxLength === undefined || full.length <= maxLength) return full;
  const body = tokenizer.encode(text, { addSpecialTokens: false });
  const at = findRun(full, body);
  if (at < 0) return full.slice(full.length - maxLength); // a post-processor that rewrites content: keep the last tokens
  const prefix = full.slice(0, at);
  const suffix = full.slice(at + body.length);
  const room = maxLength - prefix.length - suffix.length;
  if (room < 1) {
    throw new RangeError(
      `max length ${maxLength} leaves no room for text: the tokenizer adds ${prefix.length + suffix.length} special token(s) to every sequence`,
    );
  }
  return [...prefix, ...body.slice(body.length - room), ...suffix];
}

/** Index where `part` occurs inside `whole`, or −1. */
function findRun(whole: readonly number[], part: readonly number[]): number {
  outer: for (let k = 0; k + part.length <= whole.length; k++) {
    for (let j = 0; j < part.length; j++) if (whole[k + j] !== part[j]) continue outer;
    return k;
  }
  return -1;
}

/**
 * Prompts against the model's context: TRL's max_prompt_length cuts long prompts from the left
 * (the end of a prompt, nearest the answer, matters most); without it, a prompt that leaves no
 * room for max_new_tokens within max_position_embeddings is an error rather than a silently
 * degraded generation past the positions the model was trained on.
 *
 * Tokenizing takes time and memory that grow faster than a prompt's length (a 100 MB single-line
 * prompt took minutes and gigabytes): a prompt is checked by its length in UTF-8 bytes first. No
 * token of a vocabulary stands for more bytes than its longest token is written in, so a prompt of
 * more bytes than the context times that many has more tokens than the context holds.
 */

export class PromptTooLongError extends Error {
  override name = "PromptTooLongError";
  constructor(
    message: string,
    /** Dataset position of the item (or position in the sampler call when the caller gave none). */
    readonly itemIndex: number,
    readonly agent: number,
    /**
     * The prompt's length in the agent's tokens, after any max_prompt_length cut; for a prompt
     * refused by its length in bytes before it was tokenized, the fewest tokens it can have.
     */
    readonly promptTokens: number,
    /** The model's max_position_embeddings. */
    readonly maxPositionEmbeddings: number,
    /** The prompt's length in UTF-8 bytes, when it was refused by it (before tokenizing). */
    readonly promptBytes?: number,
  ) {
    super(message);
  }
}

/**
 * Tokens a cut prompt keeps beyond max_prompt_length. A cut text is made to start at a space,
 * where the tokenizers pre-split text (byte-level and SentencePiece BPE never merge across the
 * start of a word), so its tokens are the whole text's from there on; the margin leaves room to
 * find that space, and keeps a cut inside a long word, when no space is near, to the part that
 * max_prompt_length cuts away anyway.
 */
export const CUT_MARGIN_TOKENS = 64;

/** The end of `text` that takes at most `maxBytes` bytes in UTF-8, never splitting a character. */
export function textTailWithinBytes(text: string, maxBytes: number): string {
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    const unit = text.charCodeAt(start - 1);
    const pair = unit >= 0xdc00 && unit <= 0xdfff && start >= 2 && text.charCodeAt(start - 2) >= 0xd800 && text.charCodeAt(start - 2) <= 0xdbff;
    const size = pair ? 4 : unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    start -= pair ? 2 : 1;
  }
  return text.slice(start);
}

/**
 * What to tokenize of a prompt's text: the whole text when it may fit the model's context. A text
 * of more UTF-8 bytes than max_position_embeddings × `longestTokenBytes` cannot: without
 * max_prompt_length it is a PromptTooLongError at once; with it, only its last
 * (max_prompt_length + CUT_MARGIN_TOKENS) × `longestTokenBytes` bytes are tokenized, from the first
 * space among them (see CUT_MARGIN_TOKENS): more tokens than max_prompt_length keeps, and the
 * same last ones as the whole text's. Unknown `longestTokenBytes` (a tokenizer without a
 * vocabulary to measure): the text as it is.
 */
export function promptTextToEncode(
  text: string,
  longestTokenBytes: number | undefined,
  limits: Pick<PromptLimits, "maxPromptLength" | "maxNewTokens" | "maxPositionEmbeddings">,
  where: { itemIndex: number; agent: number; itemName: string },
): string {
  if (longestTokenBytes === undefined) return text;
  const ctx = limits.maxPositionEmbeddings;
  const bound = ctx * longestTokenBytes;
  // A UTF-16 code unit is at most 3 bytes in UTF-8: most prompts need no count of their bytes.
  if (text.length * 3 <= bound) return text;
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= bound) return text;
  const keep = limits.maxPromptLength;
  if (keep !== null && keep !== undefined) {
    const tail = textTailWithinBytes(text, (keep + CUT_MARGIN_TOKENS) * longestTokenBytes);
    // Within (margin − 1) tokens' bytes (a character is at most 3 bytes a code unit), so what follows still holds max_prompt_length tokens.
    const space = tail.slice(0, Math.floor(((CUT_MARGIN_TOKENS - 1) * longestTokenBytes) / 3)).search(/\s/);
    return space > 0 ? tail.slice(space) : tail;
  }
  const fewest = Math.ceil(bytes / longestTokenBytes);
  const room = Math.max(0, ctx - limits.maxNewTokens);
  throw new PromptTooLongError(
    `${where.itemName}: agent ${where.agent}'s prompt is ${bytes} bytes (UTF-8), so at least ${fewest} tokens (this tokenizer's longest token is ${longestTokenBytes} bytes): more than the model's context holds (max_position_embeddings=${ctx}); set max_prompt_length (at most ${room} with max_new_tokens=${limits.maxNewTokens}) to cut long prompts from the left (only a prompt's end is then tokenized), or shorten the prompt (its formatter, or the item)`,
    where.itemIndex,
    where.agent,
    fewest,
    ctx,
    bytes,
  );
}

export interface PromptLimits {
  /** max_prompt_length; null or absent: no cut. */
  maxPromptLength?: number | null | undefined;
  maxNewTokens: number;
  /** The model's max_position_embeddings. */
  maxPositionEmbeddings: number;
}

export interface FittedPrompt {
  /** What generation starts from, and what a pair stores and trains on. */
  ids: number[];
  /** The prompt's token count before max_prompt_length cut it; absent when it was not cut. */
  truncatedFrom?: number;
}

export function checkMaxPromptLength(value: number | null | undefined): void {
  if (value === null || value === undefined) return;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`max_prompt_length must be an integer ≥ 1, or null for no cut; got ${String(value)}`);
}

/** Cuts `ids` from the left to maxPromptLength (TRL's truncation for prompts). */
export function truncatePromptIds(ids: readonly number[], maxPromptLength: number | null | undefined): FittedPrompt {
  if (maxPromptLength === null || maxPromptLength === undefined || ids.length <= maxPromptLength) return { ids: [...ids] };
  return { ids: ids.slice(ids.length - maxPromptLength), truncatedFrom: ids.length };
}

/**
 * The prompt ids agent `agent` generates from for item `itemIndex`: cut to maxPromptLength when
 * set, then checked to leave room for maxNewTokens in the model's context.
 */
export function fitPromptIds(ids: readonly number[], limits: PromptLimits, where: { itemIndex: number; agent: number; itemName: string }): FittedPrompt {
  const fitted = truncatePromptIds(ids, limits.maxPromptLength);
  const n = fitted.ids.length;
  const ctx = limits.maxPositionEmbeddings;
  if (n + limits.maxNewTokens > ctx) {
    const room = Math.max(0, ctx - limits.maxNewTokens);
    const fix =
      limits.maxPromptLength === null || limits.maxPromptLength === undefined
        ? `set max_prompt_length (at most ${room} with max_new_tokens=${limits.maxNewTokens}) to cut long prompts from the left, shorten the prompt (its formatter), or lower max_new_tokens`
        : `lower max_prompt_length to at most ${room}, or lower max_new_tokens`;
    throw new PromptTooLongError(
      `${where.itemName}: agent ${where.agent}'s prompt is ${n} tokens${fitted.truncatedFrom === undefined ? "" : ` (cut from ${fitted.truncatedFrom} by max_prompt_length=${limits.maxPromptLength})`}; with max_new_tokens=${limits.maxNewTokens} it exceeds the model's context (max_position_embeddings=${ctx}); ${fix}`,
      where.itemIndex,
      where.agent,
      n,
      ctx,
    );
  }
  return fitted;
}

/** How many prompts a call cut, for one warning per call. */
export interface TruncationTally {
  prompts: number;
  truncated: number;
  /** The longest prompt that was cut, in tokens before the cut. */
  longest: number;
  /** The length they were cut to (max_prompt_length). */
  keptTokens: number;
}

export function emptyTally(): TruncationTally {
  return { prompts: 0, truncated: 0, longest: 0, keptTokens: 0 };
}

/** Adds one sampler call's prompts (`samples[item][agent]`) to `tally`. */
export function tallyTruncation(
  tally: TruncationTally,
  samples: readonly (readonly { promptIds: readonly number[]; truncatedFrom?: number | undefined }[])[],
): TruncationTally {
  for (const agents of samples) {
    for (const s of agents) {
      tally.prompts += 1;
      if (s.truncatedFrom === undefined) continue;
      tally.truncated += 1;
      tally.longest = Math.max(tally.longest, s.truncatedFrom);
      tally.keptTokens = s.promptIds.length;
    }
  }
  return tally;
}

/** The warning for a call that cut prompts; undefined when none was cut. */
export function truncationWarning(tally: TruncationTally): string | undefined {
  if (tally.truncated === 0) return undefined;
  return `max_prompt_length=${tally.keptTokens}: ${tally.truncated} of ${tally.prompts} agent prompts were longer (up to ${tally.longest} tokens) and were cut from the left to their last ${tally.keptTokens} tokens; the agents generated from, and the pairs store, the cut prompts. Raise max_prompt_length or shorten the prompts to keep them whole.`;
}

/** Reports the prompts a call cut, once; default console.warn, so a cut is never silent. */
export function warnTruncation(tally: TruncationTally, onWarning: ((message: string) => void) | undefined): void {
  const message = truncationWarning(tally);
  if (message !== undefined) (onWarning ?? console.warn)(message);
}

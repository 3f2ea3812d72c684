/**
 * The positions a generation would reach, checked against the model's max_position_embeddings
 * before anything is allocated: the decoders size their KV caches for prompt + max_new_tokens
 * up front, so max_new_tokens=1e12 used to end in a RangeError deep in an allocation (or a
 * native crash), and a run past the limit decodes positions the model never saw in training.
 */
import type { CausalLMConfig } from "./config.js";

export interface ContextLengthDetails {
  /** Tokens of the longest prompt (prompts are left-padded to it). */
  promptLength: number;
  maxNewTokens: number;
  maxPositionEmbeddings: number;
}

/** A generation longer than the model's context. A RangeError, as generate's other option errors are. */
export class ContextLengthError extends RangeError {
  override name = "ContextLengthError";
  constructor(
    message: string,
    readonly details: ContextLengthDetails,
  ) {
    super(message);
  }
}

/** The message, with the fix that applies: fewer new tokens when the prompt fits, else a shorter prompt. */
export function contextLengthMessage(d: ContextLengthDetails): string {
  const room = d.maxPositionEmbeddings - d.promptLength;
  const fix =
    room > 0
      ? `set max_new_tokens to at most ${room}, or shorten the prompts (max_prompt_length)`
      : `shorten the prompts (max_prompt_length) to fewer than ${d.maxPositionEmbeddings} tokens, leaving room for max_new_tokens`;
  return (
    `a ${d.promptLength}-token prompt plus max_new_tokens=${d.maxNewTokens} needs ${d.promptLength + d.maxNewTokens} positions, ` +
    `more than this model's max_position_embeddings (${d.maxPositionEmbeddings}); ${fix}`
  );
}

/** Throws {@link ContextLengthError} when `promptLength + maxNewTokens` exceeds the model's max_position_embeddings. */
export function checkContextLength(config: CausalLMConfig, promptLength: number, maxNewTokens: number): void {
  const d = { promptLength, maxNewTokens, maxPositionEmbeddings: config.maxPositionEmbeddings };
  if (promptLength + maxNewTokens <= d.maxPositionEmbeddings) return;
  throw new ContextLengthError(contextLengthMessage(d), d);
}

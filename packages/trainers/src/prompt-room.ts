import { checkContextLength } from "@pbrl/models";
import type { Formatter, TaskItem } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";
import { longestPromptTokens } from "./run-memory.js";

/** The longest prompt the run samples from, in tokens, after max_prompt_length's cut (every training item is tokenized once). */
export function runPromptTokens(
  agents: readonly ResolvedAgent[],
  formatters: readonly Formatter[],
  items: readonly TaskItem[],
  a: { max_prompt_length: number | null },
): number {
  const longest = longestPromptTokens(agents, formatters, items);
  return a.max_prompt_length === null ? longest : Math.min(longest, a.max_prompt_length);
}

/**
 * Stops a run before it writes anything when its longest prompt plus max_new_tokens does not fit
 * an agent's context (max_position_embeddings): a ContextLengthError naming both numbers and the
 * fix, instead of a failure in round 1.
 */
export function checkContextRoom(agents: readonly ResolvedAgent[], promptTokens: number, a: { max_new_tokens: number }): void {
  for (const ag of agents) checkContextLength(ag.model.config, promptTokens, a.max_new_tokens);
}

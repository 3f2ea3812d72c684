import { checkContextLength } from "@pbrl/models";
import type { Formatter, TaskItem } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";
import { longestPromptTokens } from "./run-memory.js";

/**
 * Stops a run before it writes anything when its longest prompt (after max_prompt_length's cut)
 * plus max_new_tokens does not fit an agent's context (max_position_embeddings): a ContextLengthError
 * naming both numbers and the fix, instead of a failure in round 1.
 */
export function checkContextRoom(agents: readonly ResolvedAgent[], formatters: readonly Formatter[], items: readonly TaskItem[], a: { max_new_tokens: number; max_prompt_length: number | null }): void {
  const longest = longestPromptTokens(agents, formatters, items);
  const prompt = a.max_prompt_length === null ? longest : Math.min(longest, a.max_prompt_length);
  for (const ag of agents) checkContextLength(ag.model.config, prompt, a.max_new_tokens);
}

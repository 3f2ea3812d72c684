import { checkContextLength } from "@pbrl/models";
import type { TaskItem } from "@pbrl/preference-data";
import type { ResolvedAgent } from "./agents.js";
import type { TaskSetup } from "./collaboration.js";

/**
 * The longest prompt the run samples from for `items`, in tokens (any actor's, at least 1), after
 * max_prompt_length's cut: read from the prompts rendered before the run (prompt-rendering.ts).
 */
export function runPromptTokens(task: Pick<TaskSetup, "prompts">, items: readonly TaskItem[], a: { max_prompt_length: number | null }): number {
  let longest = 1;
  for (const item of items) for (const ids of task.prompts.get(item).ids) longest = Math.max(longest, ids.length);
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

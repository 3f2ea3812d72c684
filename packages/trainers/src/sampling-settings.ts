import type { GenerationSettings } from "@pbrl/preference-data";
import type { MADPOConfig } from "./config/madpo-config.js";

/** The sampling settings every trainer generates with (collection, RL rollouts, evaluation). */
export function samplingSettings(
  a: Pick<MADPOConfig, "max_new_tokens" | "temperature" | "top_p" | "top_k" | "generation_batch_size" | "max_prompt_length">,
): GenerationSettings {
  return {
    maxNewTokens: a.max_new_tokens,
    temperature: a.temperature,
    topP: a.top_p,
    topK: a.top_k,
    maxBatchRows: a.generation_batch_size,
    maxPromptLength: a.max_prompt_length,
  };
}

/** The LoRA fields of every trainer config (TRL's ModelConfig names) as @pbrl/models' settings. */
import type { RngStreams } from "@pbrl/core-tensor";
import type { CausalLM, LoraSettings } from "@pbrl/models";
import { STREAMS } from "./stream-names.js";

export interface LoraArgs {
  use_peft: boolean;
  lora_r: number;
  lora_alpha: number;
  lora_dropout: number;
  lora_target_modules: readonly string[] | "all-linear" | null;
  use_rslora: boolean;
}

export function loraSettingsOf(a: LoraArgs): LoraSettings {
  return { r: a.lora_r, alpha: a.lora_alpha, dropout: a.lora_dropout, targetModules: a.lora_target_modules ?? undefined, useRslora: a.use_rslora };
}

/** Each LoRA agent's dropout draws from the run's stream `lora_dropout/agent_<i>` (saved in checkpoints, so a resume draws the same masks). */
export function attachDropoutStreams(agents: readonly { model: CausalLM }[], streams: RngStreams): void {
  for (const [i, ag] of agents.entries()) if (ag.model.adapter !== undefined) ag.model.dropoutStream = streams.get(`${STREAMS.loraDropout}/agent_${i}`);
}

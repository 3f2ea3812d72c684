/** The LoRA fields of every trainer config (TRL's ModelConfig names) as @pbrl/models' settings. */
import type { RngStream, RngStreams } from "@pbrl/core-tensor";
import { parseGenerationConfig, type CausalLM, type LoraSettings, type Pretrained } from "@pbrl/models";
import type { ResolvedAgent } from "./agents.js";
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

/** A LoRA view of `agent`'s base with a fresh adapter, as a loaded checkpoint: the backbone of a reward model or critic of a LoRA team. */
export function loraBackbone(agent: ResolvedAgent, a: LoraArgs, rng: RngStream): Pretrained {
  const base = agent.model.baseModel();
  try {
    return {
      model: base.withLora(loraSettingsOf(a), rng),
      tokenizer: agent.tokenizer,
      generation: agent.generation ?? parseGenerationConfig({}),
      dir: agent.source,
    };
  } finally {
    base.dispose();
  }
}

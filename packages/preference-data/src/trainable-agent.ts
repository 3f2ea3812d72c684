import type { AdamW } from "@pbrl/core-tensor";
import type { CausalLM } from "@pbrl/models";

/**
 * An agent being trained: its model, its optimizer and the id that pads its batches. MADPO
 * (@pbrl/dpo) and the RL algorithms (@pbrl/rl-backends) train the same objects, so the type lives
 * below both.
 */
export interface TrainableAgent {
  model: CausalLM;
  optimizer: AdamW;
  padTokenId: number;
}

import { globalGradNorm, tf, type AdamW } from "@pbrl/core-tensor";
import type { CausalLM } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";
import { agentLoss, marginMetrics, othersSum, type MarginMetrics } from "./loss.js";
import { agentMargins } from "./scoring.js";

/** An agent being trained: its model, its optimizer and the id that pads its batches. */
export interface TrainableAgent {
  model: CausalLM;
  optimizer: AdamW;
  padTokenId: number;
}

export class NonFiniteError extends Error {
  override name = "NonFiniteError";
}

export interface MadpoUpdateOptions {
  beta: number;
  scoreLastToken: boolean;
  /** Names the batch (and round) in errors, e.g. "round 3, batch 7". */
  where: string;
}

/**
 * One MADPO update from a batch of pairs (`batch[pair][agent]`): every agent's margins once
 * without gradients; then, agent by agent, its own differentiable margins plus the others'
 * detached ones, and one optimizer step. Returns the batch metrics computed from the detached
 * margins, i.e. before the update.
 */
export function madpoUpdate(agents: readonly TrainableAgent[], batch: readonly (readonly AgentPairTokens[])[], options: MadpoUpdateOptions): MarginMetrics {
  if (batch.length === 0) throw new RangeError("madpoUpdate: empty batch");
  const perAgent = agents.map((_, i) => batch.map((pair) => {
    const t = pair[i];
    if (t === undefined) throw new RangeError(`a pair has no tokens for agent ${i}`);
    return t;
  }));
  const opts = (i: number) => ({ scoreLastToken: options.scoreLastToken, padTokenId: agents[i]!.padTokenId });
  const detached = agents.map((a, i) => tf.tidy(() => Array.from(agentMargins(a.model, perAgent[i]!, opts(i)).dataSync())));
  detached.forEach((m, i) => {
    const bad = m.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new NonFiniteError(`MADPO: agent ${i} has a non-finite log-prob margin (${m[bad]}) for pair ${bad} in ${options.where}`);
  });
  const metrics = marginMetrics(detached, options.beta);
  agents.forEach((agent, i) => {
    const others = othersSum(detached, i);
    const { value, grads } = tf.variableGrads(() => agentLoss(agentMargins(agent.model, perAgent[i]!, opts(i)), others, options.beta), agent.model.trainableVariables());
    const named = agent.model.gradsByWeightName(grads);
    const loss = value.dataSync()[0]!;
    const norm = Number.isFinite(loss) ? globalGradNorm(named.values()) : NaN;
    if (!Number.isFinite(loss) || !Number.isFinite(norm)) {
      tf.dispose([value, ...named.values()]);
      const what = Number.isFinite(loss) ? `non-finite gradients (norm ${norm})` : `a non-finite loss (${loss})`;
      throw new NonFiniteError(`MADPO: agent ${i} has ${what} in ${options.where}`);
    }
    agent.optimizer.step(named);
    tf.dispose([value, ...named.values()]);
  });
  return metrics;
}

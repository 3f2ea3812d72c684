/**
 * IAC with separate critics (`use_separate_critic=true`): independent actor-critic, each agent
 * with its own `Critic` (own backbone, value head and optimizer at `critic_learning_rate`),
 * fitted to its own shaped returns. Single turn, on-policy, one-step A2C as CoMLRL's.
 *
 * For agent i, item r and generation g, with joint return R_{r,g} and the agent's own penalty
 * p_{i,r,g} (the reference KL):
 *
 *   shaped return   R'_{i,r,g} = R_{r,g} − p_{i,r,g}
 *   advantage       A_{i,r,g}  = R'_{i,r,g} − V_old_{i,r,g}
 *   policy loss     L_π,i = mean over the agent's rows of −log π_i(y|x) · Â   (policy-loss.ts)
 *
 * The critic of agent i reads `iacCriticText`: the agent's prompt ("v"), or prompt + response
 * ("q"). Value loss: value-loss.ts, scaled by `value_loss_coef`.
 */
import type { TrainableAgent } from "@pbrl/preference-data";
import {
  actorStep,
  criticLayout,
  fitCritic,
  recordBatchMetrics,
  recordIacCriticMetrics,
  spread,
  type ActorCriticBatch,
  type CriticLayout,
} from "./actor-critic-batch.js";
import { iacCriticText, type Critic, type CriticFitMetrics, type CriticType } from "./critic.js";
import type { Rollout } from "./rollouts.js";

function iacLayout(rollouts: readonly Rollout[], agent: number, type: CriticType): CriticLayout {
  return criticLayout(rollouts, type, (ro, g) => {
    const prompt = ro.prompts[agent]!;
    return g === undefined ? iacCriticText(prompt) : iacCriticText(prompt, ro.texts[agent]![g]!);
  });
}

/** V_old of every sample, `[agent][rollout][g]`: each agent's own critic. */
export function iacValues(critics: readonly Critic[], rollouts: readonly Rollout[], type: CriticType, batchSize: number): number[][][] {
  return critics.map((critic, i) => {
    const layout = iacLayout(rollouts, i, type);
    return spread(rollouts, layout, critic.predict(layout.texts, batchSize));
  });
}

/** One IAC update: agent after agent, its actor step, then its critic's step. */
export function iacUpdate(agents: readonly TrainableAgent[], critics: readonly Critic[], batch: ActorCriticBatch): Record<string, number> {
  const { rollouts, options } = batch;
  const metrics: Record<string, number> = {};
  const allAdv: number[] = [];
  const fits: CriticFitMetrics[] = [];
  agents.forEach((agent, i) => {
    allAdv.push(...actorStep(agent, i, batch, metrics));
    fits.push(fitCritic(critics[i]!, iacLayout(rollouts, i, batch.type), batch.shaped[i]!, batch.old[i]!, options, `critic of agent ${i}`));
  });
  recordIacCriticMetrics(fits, metrics);
  recordBatchMetrics(metrics, rollouts, allAdv, agents.length);
  return metrics;
}

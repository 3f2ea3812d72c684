/**
 * MAAC: multi-agent actor-critic with one centralized critic (CoMLRL's MAAC). Single turn,
 * on-policy, one-step A2C: no ratio, no policy clipping, no entropy.
 *
 * For agent i, item r and generation g, with joint return R_{r,g} (the frozen reward model's
 * score) and the agent's own penalty p_{i,r,g} (the reference KL, β·KL):
 *
 *   shaped return   R'_{i,r,g} = R_{r,g} − p_{i,r,g}
 *   advantage       A_{i,r,g}  = R'_{i,r,g} − V_old_{r,g}
 *   policy loss     L_π,i = mean over the agent's rows of −log π_i(y|x) · Â   (policy-loss.ts)
 *
 * V_old is the critic's prediction when the batch was collected (no gradient); Â is A, or with
 * `advantage_normalization` its batch-level z-score over the agent's samples (see
 * actor-critic-advantages.ts).
 *
 * The critic is shared by every agent and reads `maacCriticText` (all agents' prompts, plus the
 * joint action for critic_type "q"). "v": one V(s) per item, the baseline of all G generations
 * and all agents; "q": one Q(s, a_g) per joint generation. It is fitted once per update to the
 * mean over agents of the shaped returns: ½·mean_i (V − R'_i)² has exactly the gradient of
 * ½(V − mean_i R'_i)², so this is CoMLRL's per-agent regression without stepping the shared
 * critic N times on duplicated inputs (its defect 7). Value loss: value-loss.ts, scaled by
 * `value_loss_coef`.
 */
import { mean } from "@pbrl/core-tensor";
import type { TrainableAgent } from "@pbrl/preference-data";
import {
  actorStep,
  criticLayout,
  fitCritic,
  recordBatchMetrics,
  recordCriticMetrics,
  spread,
  type ActorCriticBatch,
  type CriticLayout,
} from "./actor-critic-batch.js";
import { maacCriticText, type Critic, type CriticType } from "./critic.js";
import type { Rollout } from "./rollouts.js";

function maacLayout(rollouts: readonly Rollout[], type: CriticType): CriticLayout {
  return criticLayout(rollouts, type, (ro, g) =>
    g === undefined
      ? maacCriticText(ro.prompts)
      : maacCriticText(
          ro.prompts,
          ro.texts.map((t) => t[g]!),
        ),
  );
}

/** V_old of every sample, `[agent][rollout][g]`: the centralized critic's value, the same for every agent. */
export function maacValues(agents: number, critic: Critic, rollouts: readonly Rollout[], type: CriticType, batchSize: number): number[][][] {
  const layout = maacLayout(rollouts, type);
  const v = spread(rollouts, layout, critic.predict(layout.texts, batchSize));
  return Array.from({ length: agents }, () => v.map((row) => [...row]));
}

/** One MAAC update: every agent's actor step, then one step of the centralized critic. */
export function maacUpdate(agents: readonly TrainableAgent[], critic: Critic, batch: ActorCriticBatch): Record<string, number> {
  const { rollouts, options } = batch;
  const metrics: Record<string, number> = {};
  const allAdv: number[] = [];
  agents.forEach((agent, i) => {
    allAdv.push(...actorStep(agent, i, batch, metrics));
  });
  const target = rollouts.map((ro, r) => ro.returns.map((_, g) => mean(batch.shaped.map((s) => s[r]![g]!))));
  const fit = fitCritic(critic, maacLayout(rollouts, batch.type), target, batch.old[0]!, options, "centralized critic");
  recordCriticMetrics("critic", fit, metrics);
  recordBatchMetrics(metrics, rollouts, allAdv, agents.length);
  return metrics;
}

import type { ScoringItem } from "@pbrl/models";
import { mean, NonFiniteError } from "@pbrl/core-tensor";
import type { TrainableAgent } from "@pbrl/preference-data";
import { policyGradientStep, type PolicyStepResult } from "./policy-step.js";
import { groupAdvantages, shapeReturns, stdPop, type AdvantageMode } from "./advantages.js";
import type { Rollout } from "./rollouts.js";

/** Per-sample penalties, `penalties[agent][rollout][g]`, subtracted from the joint returns before the advantage. */
export type Penalties = readonly (readonly (readonly number[])[])[];

export interface PolicyGradientOptions {
  mode: AdvantageMode;
  /** advantage_normalization: divide by the group's return spread, without re-centring (see advantages.ts). */
  normalize: boolean;
  /**
   * `penalties[agent][rollout][g]`: subtracted from the joint return of generation g before the
   * advantage (R' = R − p). The frozen-reference KL plugs in here (p = coef · KL).
   */
  penalties?: Penalties | undefined;
  /** Names the batch in errors, e.g. "epoch 2, batch 7". */
  where: string;
  /**
   * Rows per forward pass. Default: every row of the batch in one forward. Smaller values split
   * the batch and accumulate gradients (same update, less memory); still one optimizer step.
   */
  maxRowsPerForward?: number | undefined;
}

/** What one update reports; computed from the forward pass that produced the gradients (pre-step). */
export type PolicyGradientMetrics = Record<string, number>;

/**
 * The (prompt, completion) rows one agent is trained on, rollout-major then generation: row
 * r·G + g is generation g of rollout r. Completions are exactly the generated tokens, EOS
 * included when it was generated.
 */
export function policyRows(rollouts: readonly Rollout[], agent: number): ScoringItem[] {
  return rollouts.flatMap((r) => {
    const prompt = r.promptIds[agent];
    const tokens = r.tokens[agent];
    if (prompt === undefined || tokens === undefined) throw new RangeError(`the rollout of item ${r.itemIndex} has no samples for agent ${agent}`);
    if (tokens.length !== r.returns.length)
      throw new RangeError(`the rollout of item ${r.itemIndex} has ${tokens.length} generation(s) for agent ${agent} but ${r.returns.length} return(s)`);
    return tokens.map((completionIds) => ({ promptIds: prompt, completionIds }));
  });
}

/** `advantages[rollout][g]` of one agent: its shaped returns, the mode's baseline, the normalisation. */
export function agentAdvantages(rollouts: readonly Rollout[], agent: number, mode: AdvantageMode, normalize: boolean, penalties?: Penalties): number[][] {
  return rollouts.map((r, k) => {
    const p = penalties?.[agent]?.[k];
    if (penalties !== undefined && p === undefined) throw new RangeError(`no penalties for agent ${agent} on rollout ${k} (item ${r.itemIndex})`);
    let shaped: number[];
    try {
      shaped = shapeReturns(r.returns, p);
      return groupAdvantages(shaped, mode, normalize);
    } catch (err) {
      throw new RangeError(`agent ${agent}, item ${r.itemIndex}: ${(err as Error).message}`, { cause: err });
    }
  });
}

export function checkRollouts(agents: number, rollouts: readonly Rollout[], penalties: Penalties | undefined, where: string): void {
  if (rollouts.length === 0) throw new RangeError(`policyGradientUpdate: no rollouts in ${where}`);
  for (const r of rollouts) {
    if (r.tokens.length !== agents || r.promptIds.length !== agents) {
      throw new RangeError(`the rollout of item ${r.itemIndex} has samples for ${r.tokens.length} agent(s); ${agents} are being trained (${where})`);
    }
    const bad = r.returns.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new NonFiniteError(`the return of generation ${bad} of item ${r.itemIndex} is ${r.returns[bad]} in ${where}`);
  }
  if (penalties === undefined) return;
  if (penalties.length !== agents) throw new RangeError(`penalties: got ${penalties.length} agent(s), expected ${agents} (${where})`);
  penalties.forEach((perRollout, a) => {
    if (perRollout.length !== rollouts.length)
      throw new RangeError(`penalties of agent ${a}: got ${perRollout.length} rollout(s), expected ${rollouts.length} (${where})`);
    perRollout.forEach((p, k) => {
      const r = rollouts[k]!;
      if (p.length !== r.returns.length)
        throw new RangeError(`penalties of agent ${a} on item ${r.itemIndex}: got ${p.length}, expected ${r.returns.length}, one per generation (${where})`);
      const j = p.findIndex((x) => !Number.isFinite(x));
      if (j >= 0) throw new NonFiniteError(`agent ${a} has a non-finite penalty (${String(p[j])}) for generation ${j} of item ${r.itemIndex} in ${where}`);
    });
  });
}

/** Per row of `policyRows(rollouts, agent)`, the item and generation it came from. */
export function rowOwners(rollouts: readonly Rollout[]): { item: number; g: number }[] {
  return rollouts.flatMap((r) => r.returns.map((_, g) => ({ item: r.itemIndex, g })));
}

/**
 * Metrics of one update over `rollouts` from each agent's advantages and step results:
 * `agent_i/{loss, advantage_mean, logprob_mean, penalty_mean?}`, `turn_1/reward_mean`,
 * `turn_1/expected_return`, `rl/advantage_std`. With several steps per agent (mini-batches),
 * an agent's loss is the mean of its steps' losses.
 */
export function policyGradientMetrics(
  rollouts: readonly Rollout[],
  advantages: readonly (readonly number[])[],
  steps: readonly (readonly PolicyStepResult[])[],
  penalties: Penalties | undefined,
): PolicyGradientMetrics {
  const metrics: PolicyGradientMetrics = {};
  advantages.forEach((adv, i) => {
    metrics[`agent_${i}/loss`] = mean(steps[i]!.map((s) => s.loss));
    metrics[`agent_${i}/advantage_mean`] = mean(adv);
    metrics[`agent_${i}/logprob_mean`] = mean(steps[i]!.flatMap((s) => s.logProbs));
    if (penalties !== undefined) metrics[`agent_${i}/penalty_mean`] = mean(penalties[i]!.flatMap((p) => [...p]));
  });
  metrics["turn_1/reward_mean"] = mean(rollouts.flatMap((r) => r.rewards));
  metrics["turn_1/expected_return"] = mean(rollouts.flatMap((r) => r.returns));
  metrics["rl/advantage_std"] = stdPop(advantages.flat());
  return metrics;
}

/**
 * One REINFORCE-family update from a batch of rollouts. For each agent: its advantages (joint
 * returns minus its own penalties, the mode's baseline, the normalisation), then one batched
 * forward over all its (prompt, completion) rows and one optimizer step (`policyGradientStep`).
 * Agents are updated independently with the shared joint return.
 */
export function policyGradientUpdate(agents: readonly TrainableAgent[], rollouts: readonly Rollout[], options: PolicyGradientOptions): PolicyGradientMetrics {
  const { where } = options;
  checkRollouts(agents.length, rollouts, options.penalties, where);
  const owners = rowOwners(rollouts);
  const advantages: number[][] = [];
  const steps: PolicyStepResult[][] = [];
  agents.forEach((agent, i) => {
    const adv = agentAdvantages(rollouts, i, options.mode, options.normalize, options.penalties).flat();
    advantages.push(adv);
    steps.push([policyGradientStep(agent, i, { rows: policyRows(rollouts, i), advantages: adv, owners, where, maxRowsPerForward: options.maxRowsPerForward })]);
  });
  return policyGradientMetrics(rollouts, advantages, steps, options.penalties);
}

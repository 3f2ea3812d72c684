/**
 * What MAAC, IAC and IAC with a shared head have in common around their steps: the batch they
 * update from (shaped returns and V_old of every sample), each agent's advantages, the rows a
 * critic reads, and the metrics every actor-critic update reports.
 */
import { mean, NonFiniteError } from "@pbrl/core-tensor";
import { stdPop } from "./advantages.js";
import { actorCriticAdvantages } from "./actor-critic-advantages.js";
import type { Critic, CriticFitMetrics, CriticRow, CriticType } from "./critic.js";
import type { TrainableAgent } from "@pbrl/preference-data";
import { policyGradientStep, type PolicyStepResult } from "./policy-step.js";
import type { Rollout } from "./rollouts.js";
import { policyRows, rowOwners, type Penalties } from "./update.js";

/** `values[agent][rollout][g]`: the baseline of each agent's sample (MAAC: the same for every agent). */
export type SampleValues = readonly (readonly (readonly number[])[])[];

export interface ActorCriticOptions {
  criticType: CriticType;
  /** advantage_normalization: batch-level z-score of each agent's advantages. */
  normalize: boolean;
  /** value_loss_coef (≥ 0). */
  valueLossCoef: number;
  /** value_clip_range (> 0), or undefined/null for no clipping. */
  valueClipRange?: number | null | undefined;
  /** `penalties[agent][rollout][g]` (the reference KL): subtracted from the joint returns. */
  penalties?: Penalties | undefined;
  /** V_old at collection (`actorCriticValues`); computed now when absent. */
  oldValues?: SampleValues | undefined;
  /** Names the batch in errors. */
  where: string;
  /** Rows per forward pass (default all); still one optimizer step per model. */
  maxRowsPerForward?: number | undefined;
}

/** One update's checked inputs: the options, plus every agent's shaped returns and V_old. */
export interface ActorCriticBatch {
  options: ActorCriticOptions;
  rollouts: readonly Rollout[];
  type: CriticType;
  /** `shaped[agent][rollout][g]`: R − p. */
  shaped: number[][][];
  /** `old[agent][rollout][g]`: V at collection. */
  old: SampleValues;
}

export function checkRollouts(agents: number, rollouts: readonly Rollout[], penalties: Penalties | undefined, where: string): void {
  if (rollouts.length === 0) throw new RangeError(`actor-critic update: no rollouts in ${where}`);
  for (const r of rollouts) {
    if (r.tokens.length !== agents || r.promptIds.length !== agents || r.texts.length !== agents) {
      throw new RangeError(`the rollout of item ${r.itemIndex} has samples for ${r.tokens.length} agent(s); ${agents} are being trained (${where})`);
    }
    const bad = r.returns.findIndex((x) => !Number.isFinite(x));
    if (bad >= 0) throw new NonFiniteError(`the return of generation ${bad} of item ${r.itemIndex} is ${r.returns[bad]} in ${where}`);
  }
  if (penalties !== undefined && penalties.length !== agents)
    throw new RangeError(`penalties: got ${penalties.length} agent(s), expected ${agents} (${where})`);
}

/** Agent i's advantages over the batch, flat in row order (rollout-major, then generation). */
export function agentAdvantages(batch: ActorCriticBatch, i: number): number[] {
  try {
    return actorCriticAdvantages(batch.shaped[i]!, batch.old[i]!, batch.options.normalize).flat();
  } catch (err) {
    if (err instanceof NonFiniteError) throw new NonFiniteError(`agent ${i}: ${err.message} in ${batch.options.where}`);
    throw new RangeError(`agent ${i}: ${(err as Error).message} (${batch.options.where})`, { cause: err });
  }
}

/**
 * Agent i's actor step where the critic learns apart (MAAC, IAC with separate critics): the
 * REINFORCE family's step (`policyGradientStep`) on the critic's advantages. Records the agent's
 * metrics in `metrics`; returns its advantages.
 */
export function actorStep(agent: TrainableAgent, i: number, batch: ActorCriticBatch, metrics: Record<string, number>): number[] {
  const adv = agentAdvantages(batch, i);
  const step = policyGradientStep(agent, i, {
    rows: policyRows(batch.rollouts, i),
    advantages: adv,
    owners: rowOwners(batch.rollouts),
    where: batch.options.where,
    maxRowsPerForward: batch.options.maxRowsPerForward,
  });
  recordAgentMetrics(metrics, i, adv, step, batch);
  return adv;
}

/** The rows of one critic: per rollout ("v") or per (rollout, g) ("q"), with their sample slots. */
export interface CriticLayout {
  texts: string[];
  /** For each critic row, the (rollout, g) samples it values. */
  slots: { r: number; g: number }[][];
}

/**
 * The layout of critic texts over a batch: `text(rollout, g)` names the text of generation g
 * ("q"), `text(rollout)` that of the rollout's state ("v", one row valuing all its generations).
 */
export function criticLayout(rollouts: readonly Rollout[], type: CriticType, text: (ro: Rollout, g?: number) => string): CriticLayout {
  const texts: string[] = [];
  const slots: { r: number; g: number }[][] = [];
  rollouts.forEach((ro, r) => {
    const G = ro.returns.length;
    if (type === "v") {
      texts.push(text(ro));
      slots.push(Array.from({ length: G }, (_, g) => ({ r, g })));
    } else {
      for (let g = 0; g < G; g++) {
        texts.push(text(ro, g));
        slots.push([{ r, g }]);
      }
    }
  });
  return { texts, slots };
}

/** Row values spread back to `[rollout][g]`. */
export function spread(rollouts: readonly Rollout[], layout: CriticLayout, rowValues: readonly number[]): number[][] {
  const out = rollouts.map((ro) => ro.returns.map(() => NaN));
  layout.slots.forEach((slots, k) => slots.forEach(({ r, g }) => (out[r]![g] = rowValues[k]!)));
  return out;
}

/** The critic's regression rows: each layout row with the targets and V_old of the samples it values. */
export function criticRows(critic: Critic, layout: CriticLayout, targets: readonly (readonly number[])[], old: readonly (readonly number[])[]): CriticRow[] {
  return layout.texts.map((text, k) => ({
    ids: critic.encode(text),
    targets: layout.slots[k]!.map(({ r, g }) => targets[r]![g]!),
    oldValues: layout.slots[k]!.map(({ r, g }) => old[r]![g]!),
  }));
}

/** Fits `critic` to `targets` (`[rollout][g]`) in one optimizer step, with the update's value-loss settings. */
export function fitCritic(
  critic: Critic,
  layout: CriticLayout,
  targets: readonly (readonly number[])[],
  old: readonly (readonly number[])[],
  options: ActorCriticOptions,
  what: string,
): CriticFitMetrics {
  return critic.fit(criticRows(critic, layout, targets, old), {
    valueLossCoef: options.valueLossCoef,
    clipRange: options.valueClipRange,
    where: `${options.where}, ${what}`,
    maxRowsPerForward: options.maxRowsPerForward,
  });
}

/** `agent_i/{loss, advantage_mean, logprob_mean, value_mean, penalty_mean?}`. */
export function recordAgentMetrics(metrics: Record<string, number>, i: number, adv: readonly number[], step: PolicyStepResult, batch: ActorCriticBatch): void {
  metrics[`agent_${i}/loss`] = step.loss;
  metrics[`agent_${i}/advantage_mean`] = mean(adv);
  metrics[`agent_${i}/logprob_mean`] = mean(step.logProbs);
  metrics[`agent_${i}/value_mean`] = mean(batch.old[i]!.flat());
  const penalties = batch.options.penalties;
  if (penalties !== undefined) metrics[`agent_${i}/penalty_mean`] = mean(penalties[i]!.flatMap((p) => [...p]));
}

export function recordCriticMetrics(prefix: string, m: CriticFitMetrics, out: Record<string, number>): void {
  out[`${prefix}/value_loss`] = m.valueLoss;
  out[`${prefix}/value_mean`] = m.valueMean;
  out[`${prefix}/target_mean`] = m.targetMean;
  out[`${prefix}/clip_fraction`] = m.clipFraction;
}

/** IAC: `agent_i/{value_loss, target_mean, clip_fraction}` of each agent's critic, and `critic/*` their mean. */
export function recordIacCriticMetrics(fits: readonly CriticFitMetrics[], metrics: Record<string, number>): void {
  fits.forEach((m, i) => {
    metrics[`agent_${i}/value_loss`] = m.valueLoss;
    metrics[`agent_${i}/target_mean`] = m.targetMean;
    metrics[`agent_${i}/clip_fraction`] = m.clipFraction;
  });
  recordCriticMetrics(
    "critic",
    {
      valueLoss: mean(fits.map((m) => m.valueLoss)),
      valueMean: mean(fits.map((m) => m.valueMean)),
      targetMean: mean(fits.map((m) => m.targetMean)),
      clipFraction: mean(fits.map((m) => m.clipFraction)),
    },
    metrics,
  );
}

/** The joint metrics that close every update: returns, the advantages' spread, and CoMLRL's names. */
export function recordBatchMetrics(metrics: Record<string, number>, rollouts: readonly Rollout[], allAdvantages: readonly number[], agents: number): void {
  metrics["turn_1/reward_mean"] = mean(rollouts.flatMap((r) => r.rewards));
  metrics["turn_1/expected_return"] = mean(rollouts.flatMap((r) => r.returns));
  metrics["rl/advantage_std"] = stdPop(allAdvantages);
  Object.assign(metrics, comlrlNames(metrics, agents));
}

/**
 * CoMLRL's actor-critic metric names, beside pbrl's own (the same numbers, for dashboards built on
 * CoMLRL's runs): `turn_1/policy_loss` (the agents' mean policy loss), `turn_1/value_loss`,
 * `turn_1/value_pred_mean` (V at collection), `turn_1/value_target_mean`.
 */
function comlrlNames(m: Readonly<Record<string, number>>, agents: number): Record<string, number> {
  const perAgent = (key: string) => mean(Array.from({ length: agents }, (_, i) => m[`agent_${i}/${key}`]!));
  return {
    "turn_1/policy_loss": perAgent("loss"),
    "turn_1/value_loss": m["critic/value_loss"]!,
    "turn_1/value_pred_mean": perAgent("value_mean"),
    "turn_1/value_target_mean": m["critic/target_mean"]!,
  };
}

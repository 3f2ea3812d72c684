import { globalGradNorm, tf, type AdamW } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, type CausalLM, type ScoringItem } from "@pbrl/models";
import { groupAdvantages, shapeReturns, stdPop, type AdvantageMode } from "./advantages.js";
import type { Rollout } from "./rollouts.js";

/**
 * An agent being trained: its model, its optimizer and the id that pads its batches
 * (structurally the same as `@pbrl/dpo`'s, so one agent object serves both).
 */
export interface TrainableAgent {
  model: CausalLM;
  optimizer: AdamW;
  padTokenId: number;
}

export class NonFiniteError extends Error {
  override name = "NonFiniteError";
}

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
    if (tokens.length !== r.returns.length) throw new RangeError(`the rollout of item ${r.itemIndex} has ${tokens.length} generation(s) for agent ${agent} but ${r.returns.length} return(s)`);
    return tokens.map((completionIds) => ({ promptIds: prompt, completionIds }));
  });
}

/**
 * Differentiable log π(completion | prompt) per row: the sum over every completion token, EOS
 * included, padding excluded. All rows go through one right-padded forward pass; padding is
 * placed by length, never found by comparing with the pad id, so an EOS equal to the pad id is
 * still scored.
 */
export function sequenceLogProbs(model: CausalLM, rows: readonly ScoringItem[], padTokenId: number): tf.Tensor1D {
  return tf.tidy(() => {
    const { tokens, sums } = completionLogProbs(model, buildScoringBatch(rows, padTokenId));
    tokens.dispose();
    return sums;
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

function checkRollouts(agents: number, rollouts: readonly Rollout[], penalties: Penalties | undefined, where: string): void {
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
    if (perRollout.length !== rollouts.length) throw new RangeError(`penalties of agent ${a}: got ${perRollout.length} rollout(s), expected ${rollouts.length} (${where})`);
    perRollout.forEach((p, k) => {
      const r = rollouts[k]!;
      if (p.length !== r.returns.length) throw new RangeError(`penalties of agent ${a} on item ${r.itemIndex}: got ${p.length}, expected ${r.returns.length}, one per generation (${where})`);
      const j = p.findIndex((x) => typeof x !== "number" || !Number.isFinite(x));
      if (j >= 0) throw new NonFiniteError(`agent ${a} has a non-finite penalty (${String(p[j])}) for generation ${j} of item ${r.itemIndex} in ${where}`);
    });
  });
}

function addInto(acc: Map<string, tf.Tensor>, grads: Map<string, tf.Tensor>): void {
  for (const [name, g] of grads) {
    const prev = acc.get(name);
    if (prev === undefined) {
      acc.set(name, g);
    } else {
      acc.set(name, tf.add(prev, g));
      tf.dispose([prev, g]);
    }
  }
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * One REINFORCE-family update from a batch of rollouts. For each agent: its advantages (joint
 * returns minus its own penalties, the mode's baseline, the normalisation), then one batched
 * forward over all its (prompt, completion) rows, the sequence-level loss
 *
 *   L_i = mean over rows of −log π_i(completion | prompt) · A
 *
 * (sum of log-probs over every generated token, EOS included; as CoMLRL, no per-token
 * normalisation) and one optimizer step. Agents are updated independently with the shared joint
 * return. A non-finite log-prob, loss or gradient stops with a `NonFiniteError` naming the
 * agent and `where`; nothing is skipped or replaced.
 */
export function policyGradientUpdate(agents: readonly TrainableAgent[], rollouts: readonly Rollout[], options: PolicyGradientOptions): PolicyGradientMetrics {
  const { where } = options;
  checkRollouts(agents.length, rollouts, options.penalties, where);
  const chunk = options.maxRowsPerForward;
  if (chunk !== undefined && (!Number.isInteger(chunk) || chunk < 1)) throw new RangeError(`maxRowsPerForward must be an integer ≥ 1, got ${chunk}`);
  const metrics: PolicyGradientMetrics = {};
  const allAdvantages: number[] = [];
  agents.forEach((agent, i) => {
    const adv = agentAdvantages(rollouts, i, options.mode, options.normalize, options.penalties).flat();
    const rows = policyRows(rollouts, i);
    const owner = rows.map((_, r) => {
      let k = r;
      for (const ro of rollouts) {
        if (k < ro.returns.length) return { item: ro.itemIndex, g: k };
        k -= ro.returns.length;
      }
      return { item: -1, g: -1 };
    });
    if (rows.every((row) => row.completionIds.length === 0)) throw new RangeError(`agent ${i} generated no tokens in ${where}; there is nothing to train on`);
    const n = rows.length;
    const size = chunk ?? n;
    const grads = new Map<string, tf.Tensor>();
    const logProbs: number[] = [];
    let loss = 0;
    try {
      for (let start = 0; start < n; start += size) {
        const part = rows.slice(start, start + size);
        if (part.every((row) => row.completionIds.length === 0)) {
          // No token: log π = 0 and no gradient; the rows still count in the mean.
          logProbs.push(...part.map(() => 0));
          continue;
        }
        const a = adv.slice(start, start + size);
        const { value, grads: raw } = tf.variableGrads(() => {
          const sums = sequenceLogProbs(agent.model, part, agent.padTokenId);
          logProbs.push(...sums.dataSync());
          // Σ_rows −log π · A / n: this part's share of the mean over the whole batch.
          return tf.div(tf.sum(tf.mul(tf.neg(sums), tf.tensor1d(a))), n) as tf.Scalar;
        }, agent.model.trainableVariables());
        loss += value.dataSync()[0]!;
        value.dispose();
        addInto(grads, agent.model.gradsByWeightName(raw));
      }
      const badRow = logProbs.findIndex((x) => !Number.isFinite(x));
      if (badRow >= 0) {
        const o = owner[badRow]!;
        throw new NonFiniteError(`agent ${i} has a non-finite log-prob (${logProbs[badRow]}) for generation ${o.g} of item ${o.item} in ${where}`);
      }
      if (!Number.isFinite(loss)) throw new NonFiniteError(`agent ${i} has a non-finite loss (${loss}) in ${where}`);
      const norm = globalGradNorm(grads.values());
      if (!Number.isFinite(norm)) throw new NonFiniteError(`agent ${i} has non-finite gradients (norm ${norm}) in ${where}`);
      agent.optimizer.step(grads);
    } finally {
      tf.dispose([...grads.values()]);
    }
    metrics[`agent_${i}/loss`] = loss;
    metrics[`agent_${i}/advantage_mean`] = mean(adv);
    metrics[`agent_${i}/logprob_mean`] = mean(logProbs);
    if (options.penalties !== undefined) metrics[`agent_${i}/penalty_mean`] = mean(options.penalties[i]!.flatMap((p) => [...p]));
    allAdvantages.push(...adv);
  });
  metrics["turn_1/reward_mean"] = mean(rollouts.flatMap((r) => r.rewards));
  metrics["turn_1/expected_return"] = mean(rollouts.flatMap((r) => r.returns));
  metrics["rl/advantage_std"] = stdPop(allAdvantages);
  return metrics;
}

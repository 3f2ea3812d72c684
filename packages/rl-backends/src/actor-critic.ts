import { addGrads, globalGradNorm, tf } from "@pbrl/core-tensor";
import { buildScoringBatch, gatherRows, matMul, selectedLogProbs, type CausalLM, type ScoringItem } from "@pbrl/models";
import { ADVANTAGE_STD_FLOOR, shapeReturns, stdPop } from "./advantages.js";
import {
  Critic,
  checkCriticType,
  type ActorValueHead,
  iacCriticText,
  maacCriticText,
  splitGrads,
  type CriticFitMetrics,
  type CriticRow,
  type CriticType,
} from "./critic.js";
import { runCollections, type BatchReport, type CollectionSettings } from "./epochs.js";
import type { Rollout } from "./rollouts.js";
import { mean, NonFiniteError, type TrainableAgent } from "@pbrl/preference-data";
import { policyGradientStep } from "./policy-step.js";
import { policyRows, rowOwners, type Penalties } from "./update.js";
import { valueLoss, valueLossTerms } from "./value-loss.js";

/**
 * Actor-critic algorithms of MARLHF: MAAC (one centralized critic) and IAC (per-agent critics).
 * Single turn, on-policy, one-step A2C as CoMLRL's (no ratio, no policy clipping, no entropy).
 *
 * For agent i, item r and generation g, with joint return R_{r,g} (the frozen reward model's
 * score) and the agent's own penalty p_{i,r,g} (the reference KL, β·KL):
 *
 *   shaped return   R'_{i,r,g} = R_{r,g} − p_{i,r,g}
 *   advantage       A_{i,r,g}  = R'_{i,r,g} − V_old_{i,r,g}
 *   policy loss     L_π,i = mean over the agent's rows of −log π_i(y|x) · Â   (sum of token log-probs, EOS included)
 *
 * where V_old is the critic's prediction when the batch was collected (no gradient) and Â is A,
 * or with `advantage_normalization` the batch-level z-score (A − mean(A)) / std_pop(A) over the
 * agent's samples of the update (CoMLRL's AC normalisation; skipped below two samples, and a
 * batch whose std is under 1e-6 is only centred, never divided by the floor).
 *
 * MAAC — one critic shared by every agent, reading `maacCriticText` (all agents' prompts, plus
 * the joint action for critic_type "q"). "v": one V(s) per item, the baseline of all G
 * generations and all agents; "q": one Q(s, a_g) per joint generation. The critic is fitted once
 * per update to the mean over agents of the shaped returns: ½·mean_i (V − R'_i)² has exactly the
 * gradient of ½(V − mean_i R'_i)², so this is CoMLRL's per-agent regression without stepping the
 * shared critic N times on duplicated inputs (its defect 7).
 *
 * IAC — each agent its own critic, fitted to its own shaped returns:
 * - separate (`use_separate_critic=true`): a `Critic` per agent reading `iacCriticText` (the
 *   agent's prompt for "v", prompt + response for "q"); its own optimizer (`critic_learning_rate`).
 * - shared (`use_separate_critic=false`): an `ActorValueHead` on the actor's own backbone. One
 *   forward pass over [prompt ; completion] gives both the log-probs and the value: "v" reads the
 *   hidden state at the last prompt token (which, the model being causal, is V(prompt)), "q" at
 *   the last completion token. The combined loss L_π + value_loss_coef · L_V is differentiated
 *   with respect to backbone and head: the backbone's gradient (policy and value) is stepped by
 *   the agent's own optimizer, the head's by the head's optimizer.
 *
 * Value loss: value-loss.ts (½ squared error, optional PPO clipping with `value_clip_range`),
 * scaled by `value_loss_coef`.
 */
export type ActorCriticSetup =
  | { algorithm: "maac"; critic: Critic }
  | { algorithm: "iac"; layout: "separate"; critics: readonly Critic[] }
  | { algorithm: "iac"; layout: "shared"; valueHeads: readonly ActorValueHead[] };

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

export class ActorCriticSetupError extends Error {
  override name = "ActorCriticSetupError";
}

function checkSetup(agents: readonly TrainableAgent[], setup: ActorCriticSetup): void {
  if (setup.algorithm === "maac") {
    if (!(setup.critic instanceof Critic)) throw new ActorCriticSetupError("maac needs one centralized Critic (`critic`)");
    return;
  }
  if (setup.layout === "separate") {
    if (setup.critics.length !== agents.length)
      throw new ActorCriticSetupError(
        `iac with use_separate_critic=true needs one critic per agent: got ${setup.critics.length} critic(s) for ${agents.length} agent(s)`,
      );
  } else {
    if (setup.valueHeads.length !== agents.length)
      throw new ActorCriticSetupError(
        `iac with use_separate_critic=false needs one value head per agent: got ${setup.valueHeads.length} for ${agents.length} agent(s)`,
      );
    setup.valueHeads.forEach((h, i) => {
      if (h.head.options.hiddenSize !== agents[i]!.model.config.hiddenSize)
        throw new ActorCriticSetupError(
          `value head ${i} reads hidden size ${h.head.options.hiddenSize}, but agent ${i}'s backbone has ${agents[i]!.model.config.hiddenSize}`,
        );
    });
  }
}

function checkRollouts(agents: number, rollouts: readonly Rollout[], penalties: Penalties | undefined, where: string): void {
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

/** `shaped[rollout][g]` of one agent: R − p (its own penalties). */
export function shapedReturns(rollouts: readonly Rollout[], agent: number, penalties?: Penalties): number[][] {
  return rollouts.map((r, k) => {
    const p = penalties?.[agent]?.[k];
    if (penalties !== undefined && p === undefined) throw new RangeError(`no penalties for agent ${agent} on rollout ${k} (item ${r.itemIndex})`);
    try {
      return shapeReturns(r.returns, p);
    } catch (err) {
      throw new RangeError(`agent ${agent}, item ${r.itemIndex}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * One agent's advantages A = R' − V over a batch, `[rollout][g]`; with `normalize`, the
 * batch-level z-score (A − mean) / std_pop (unscaled, only centred, when std_pop < 1e-6; left as
 * is with fewer than two samples).
 */
export function actorCriticAdvantages(shaped: readonly (readonly number[])[], values: readonly (readonly number[])[], normalize: boolean): number[][] {
  if (shaped.length !== values.length) throw new RangeError(`advantages: ${shaped.length} rollout(s) of returns but ${values.length} of values`);
  const adv = shaped.map((row, r) => {
    const v = values[r]!;
    if (v.length !== row.length) throw new RangeError(`advantages: rollout ${r} has ${row.length} return(s) but ${v.length} value(s)`);
    return row.map((x, g) => {
      const a = x - v[g]!;
      if (!Number.isFinite(a)) throw new NonFiniteError(`advantage of rollout ${r}, generation ${g} is ${a} (return ${x}, value ${v[g]})`);
      return a;
    });
  });
  const flat = adv.flat();
  if (!normalize || flat.length < 2) return adv;
  const m = mean(flat);
  const s = stdPop(flat);
  const scale = s < ADVANTAGE_STD_FLOOR ? 1 : s;
  return adv.map((row) => row.map((a) => (a - m) / scale));
}

/** The rows of one agent's critic: per rollout ("v") or per (rollout, g) ("q"), with their sample slots. */
interface CriticLayout {
  texts: string[];
  /** For each critic row, the (rollout, g) samples it values. */
  slots: { r: number; g: number }[][];
}

function maacLayout(rollouts: readonly Rollout[], type: CriticType): CriticLayout {
  const texts: string[] = [];
  const slots: { r: number; g: number }[][] = [];
  rollouts.forEach((ro, r) => {
    const G = ro.returns.length;
    if (type === "v") {
      texts.push(maacCriticText(ro.prompts));
      slots.push(Array.from({ length: G }, (_, g) => ({ r, g })));
    } else {
      for (let g = 0; g < G; g++) {
        texts.push(
          maacCriticText(
            ro.prompts,
            ro.texts.map((t) => t[g]!),
          ),
        );
        slots.push([{ r, g }]);
      }
    }
  });
  return { texts, slots };
}

function iacLayout(rollouts: readonly Rollout[], agent: number, type: CriticType): CriticLayout {
  const texts: string[] = [];
  const slots: { r: number; g: number }[][] = [];
  rollouts.forEach((ro, r) => {
    const G = ro.returns.length;
    const prompt = ro.prompts[agent]!;
    if (type === "v") {
      texts.push(iacCriticText(prompt));
      slots.push(Array.from({ length: G }, (_, g) => ({ r, g })));
    } else {
      for (let g = 0; g < G; g++) {
        texts.push(iacCriticText(prompt, ro.texts[agent]![g]!));
        slots.push([{ r, g }]);
      }
    }
  });
  return { texts, slots };
}

function spread(rollouts: readonly Rollout[], layout: CriticLayout, rowValues: readonly number[]): number[][] {
  const out = rollouts.map((ro) => ro.returns.map(() => NaN));
  layout.slots.forEach((slots, k) => slots.forEach(({ r, g }) => (out[r]![g] = rowValues[k]!)));
  return out;
}

/** Value positions in a scoring batch: last prompt token ("v") or last completion token ("q"). */
function valuePositions(rows: readonly ScoringItem[], length: number, type: CriticType): Int32Array {
  return Int32Array.from(rows, (row, b) => b * length + row.promptIds.length - 1 + (type === "q" ? row.completionIds.length : 0));
}

/**
 * The shared layout's forward pass: one pass over [prompt ; completion] rows giving the sequence
 * log-probs [rows] and the value-head output [rows] at each row's value position.
 */
export function actorForward(
  model: CausalLM,
  head: ActorValueHead,
  rows: readonly ScoringItem[],
  padTokenId: number,
  type: CriticType,
  withLogProbs = true,
): { sums: tf.Tensor1D; values: tf.Tensor1D } {
  return tf.tidy(() => {
    const batch = buildScoringBatch(rows, padTokenId);
    const h = model.hidden({
      ids: batch.ids,
      batch: batch.batch,
      length: batch.length,
      ...(batch.lengths !== undefined ? { sequenceLengths: batch.lengths } : {}),
    });
    const values = head.head.apply(gatherRows(h, valuePositions(rows, batch.length, type)));
    const m = batch.targets.length;
    if (m === 0 || !withLogProbs) return { sums: tf.zeros([batch.batch]) as tf.Tensor1D, values };
    const tokens = selectedLogProbs(model.logits(gatherRows(h, batch.predictRows)), batch.targets);
    const seg = tf.tensor2d(batch.segment, [batch.batch, m]);
    const sums = tf.reshape(matMul(seg, tf.reshape(tokens, [m, 1])), [batch.batch]) as tf.Tensor1D;
    return { sums, values };
  });
}

/**
 * V_old of every sample, `values[agent][rollout][g]`, without gradients: what the advantages are
 * measured against and what value clipping is relative to. Call it right after sampling.
 */
export function actorCriticValues(
  agents: readonly TrainableAgent[],
  setup: ActorCriticSetup,
  rollouts: readonly Rollout[],
  criticType: CriticType,
  batchSize = 16,
): number[][][] {
  checkSetup(agents, setup);
  const type = checkCriticType(criticType);
  if (rollouts.length === 0) return agents.map(() => []);
  if (setup.algorithm === "maac") {
    const layout = maacLayout(rollouts, type);
    const v = spread(rollouts, layout, setup.critic.predict(layout.texts, batchSize));
    return agents.map(() => v.map((row) => [...row]));
  }
  if (setup.layout === "separate") {
    return agents.map((_, i) => {
      const layout = iacLayout(rollouts, i, type);
      return spread(rollouts, layout, setup.critics[i]!.predict(layout.texts, batchSize));
    });
  }
  return agents.map((agent, i) => {
    const rows = policyRows(rollouts, i);
    const flat: number[] = [];
    for (let s = 0; s < rows.length; s += batchSize) {
      const { sums, values } = actorForward(agent.model, setup.valueHeads[i]!, rows.slice(s, s + batchSize), agent.padTokenId, type, false);
      flat.push(...values.dataSync());
      tf.dispose([sums, values]);
    }
    let k = 0;
    return rollouts.map((ro) => ro.returns.map(() => flat[k++]!));
  });
}

interface ValueTerm {
  head: ActorValueHead;
  type: CriticType;
  targets: number[];
  oldValues: number[];
  coef: number;
  clipRange: number | null | undefined;
}

interface AgentStepResult {
  loss: number;
  logProbs: number[];
  value?: CriticFitMetrics;
}

/**
 * The shared layout's step of agent i: mean(−log π · A) over its rows plus value_loss_coef ·
 * value loss through the same forward pass (backbone stepped by the agent's optimizer, head by
 * the head's). Without a value head the actor's step is the REINFORCE family's
 * (`policyGradientStep`): the critic learns apart.
 */
function sharedHeadStep(
  i: number,
  agent: TrainableAgent,
  rows: ScoringItem[],
  adv: number[],
  vt: ValueTerm,
  where: string,
  chunk: number | undefined,
): AgentStepResult {
  const n = rows.length;
  const size = chunk ?? n;
  const grads = new Map<string, tf.Tensor>();
  const headGrads = new Map<string, tf.Tensor>();
  const logProbs: number[] = [];
  const preds: number[] = [];
  let loss = 0;
  try {
    for (let start = 0; start < n; start += size) {
      const part = rows.slice(start, start + size);
      const a = adv.slice(start, start + size);
      const tg = vt.targets.slice(start, start + size);
      const old = vt.oldValues.slice(start, start + size);
      let policyPart = 0;
      const { value, grads: raw } = agent.model.training(() =>
        tf.variableGrads(() => {
          const { sums, values } = actorForward(agent.model, vt.head, part, agent.padTokenId, vt.type);
          logProbs.push(...sums.dataSync());
          preds.push(...values.dataSync());
          const pl = tf.div(tf.sum(tf.mul(tf.neg(sums), tf.tensor1d(a))), n);
          policyPart = pl.dataSync()[0]!;
          const vl = valueLoss(values, tg, { oldValues: old, clipRange: vt.clipRange, denominator: n });
          return tf.add(pl, tf.mul(vl, vt.coef)) as tf.Scalar;
        }, [...agent.model.trainableVariables(), ...vt.head.head.trainableVariables()]),
      );
      loss += policyPart;
      value.dispose();
      const split = splitGrads(agent.model, vt.head.head, raw);
      addGrads(grads, split.backbone);
      addGrads(headGrads, split.head);
    }
    const badRow = logProbs.findIndex((x) => !Number.isFinite(x));
    if (badRow >= 0) throw new NonFiniteError(`agent ${i} has a non-finite log-prob (${logProbs[badRow]}) for row ${badRow} in ${where}`);
    const badV = preds.findIndex((x) => !Number.isFinite(x));
    if (badV >= 0) throw new NonFiniteError(`agent ${i} has a non-finite value prediction (${preds[badV]}) for row ${badV} in ${where}`);
    if (!Number.isFinite(loss)) throw new NonFiniteError(`agent ${i} has a non-finite loss (${loss}) in ${where}`);
    const norm = globalGradNorm([...grads.values(), ...headGrads.values()]);
    if (!Number.isFinite(norm)) throw new NonFiniteError(`agent ${i} has non-finite gradients (norm ${norm}) in ${where}`);
    if (grads.size > 0) agent.optimizer.step(grads);
    vt.head.optimizer.step(headGrads);
  } finally {
    tf.dispose([...grads.values(), ...headGrads.values()]);
  }
  const terms = valueLossTerms(preds, vt.targets, { oldValues: vt.oldValues, clipRange: vt.clipRange });
  return {
    loss,
    logProbs,
    value: {
      valueLoss: mean(terms.losses),
      valueMean: mean(preds),
      targetMean: mean(vt.targets),
      clipFraction: terms.clipped.filter(Boolean).length / preds.length,
    },
  };
}

function criticRows(critic: Critic, layout: CriticLayout, targets: readonly (readonly number[])[], old: readonly (readonly number[])[]): CriticRow[] {
  return layout.texts.map((text, k) => ({
    ids: critic.encode(text),
    targets: layout.slots[k]!.map(({ r, g }) => targets[r]![g]!),
    oldValues: layout.slots[k]!.map(({ r, g }) => old[r]![g]!),
  }));
}

function criticMetrics(prefix: string, m: CriticFitMetrics, out: Record<string, number>): void {
  out[`${prefix}/value_loss`] = m.valueLoss;
  out[`${prefix}/value_mean`] = m.valueMean;
  out[`${prefix}/target_mean`] = m.targetMean;
  out[`${prefix}/clip_fraction`] = m.clipFraction;
}

/**
 * One actor-critic update from a batch of rollouts: every agent's actor step (and, in IAC, its
 * critic step), then, in MAAC, one step of the shared critic. Returns metrics computed in the
 * forward passes that produced the gradients (pre-step):
 * `agent_i/{loss, advantage_mean, logprob_mean, value_mean, penalty_mean?}`, for IAC also
 * `agent_i/{value_loss, target_mean, clip_fraction}`; joint `critic/{value_loss, value_mean,
 * target_mean, clip_fraction}` (MAAC: its critic; IAC: the mean over agents), `rl/advantage_std`,
 * `turn_1/reward_mean`, `turn_1/expected_return`, and CoMLRL's names for the same numbers
 * (`turn_1/policy_loss`, `turn_1/value_loss`, `turn_1/value_pred_mean`, `turn_1/value_target_mean`).
 */
export function actorCriticUpdate(
  agents: readonly TrainableAgent[],
  setup: ActorCriticSetup,
  rollouts: readonly Rollout[],
  options: ActorCriticOptions,
): Record<string, number> {
  const { where } = options;
  checkSetup(agents, setup);
  const type = checkCriticType(options.criticType);
  checkRollouts(agents.length, rollouts, options.penalties, where);
  if (!(options.valueLossCoef >= 0) || !Number.isFinite(options.valueLossCoef))
    throw new RangeError(`value_loss_coef must be a finite number ≥ 0, got ${options.valueLossCoef}`);
  const chunk = options.maxRowsPerForward;
  if (chunk !== undefined && (!Number.isInteger(chunk) || chunk < 1)) throw new RangeError(`maxRowsPerForward must be an integer ≥ 1, got ${chunk}`);
  const old = options.oldValues ?? actorCriticValues(agents, setup, rollouts, type, chunk ?? 16);
  if (old.length !== agents.length) throw new RangeError(`oldValues: got ${old.length} agent(s), expected ${agents.length} (${where})`);
  old.forEach((perRollout, a) => {
    if (perRollout.length !== rollouts.length)
      throw new RangeError(`oldValues of agent ${a}: got ${perRollout.length} rollout(s), expected ${rollouts.length} (${where})`);
  });
  const shaped = agents.map((_, i) => shapedReturns(rollouts, i, options.penalties));
  const metrics: Record<string, number> = {};
  const allAdv: number[] = [];
  const iacCritic: CriticFitMetrics[] = [];
  agents.forEach((agent, i) => {
    let adv: number[];
    try {
      adv = actorCriticAdvantages(shaped[i]!, old[i]!, options.normalize).flat();
    } catch (err) {
      if (err instanceof NonFiniteError) throw new NonFiniteError(`agent ${i}: ${err.message} in ${where}`);
      throw new RangeError(`agent ${i}: ${(err as Error).message} (${where})`, { cause: err });
    }
    const rows = policyRows(rollouts, i);
    const vt: ValueTerm | undefined =
      setup.algorithm === "iac" && setup.layout === "shared"
        ? {
            head: setup.valueHeads[i]!,
            type,
            targets: shaped[i]!.flat(),
            oldValues: old[i]!.flat(),
            coef: options.valueLossCoef,
            clipRange: options.valueClipRange,
          }
        : undefined;
    const res: AgentStepResult =
      vt === undefined
        ? policyGradientStep(agent, i, { rows, advantages: adv, owners: rowOwners(rollouts), where, maxRowsPerForward: chunk })
        : sharedHeadStep(i, agent, rows, adv, vt, where, chunk);
    metrics[`agent_${i}/loss`] = res.loss;
    metrics[`agent_${i}/advantage_mean`] = mean(adv);
    metrics[`agent_${i}/logprob_mean`] = mean(res.logProbs);
    metrics[`agent_${i}/value_mean`] = mean(old[i]!.flat());
    if (options.penalties !== undefined) metrics[`agent_${i}/penalty_mean`] = mean(options.penalties[i]!.flatMap((p) => [...p]));
    allAdv.push(...adv);
    if (res.value !== undefined) iacCritic.push(res.value);
    if (setup.algorithm === "iac" && setup.layout === "separate") {
      const critic = setup.critics[i]!;
      const fit = critic.fit(criticRows(critic, iacLayout(rollouts, i, type), shaped[i]!, old[i]!), {
        valueLossCoef: options.valueLossCoef,
        clipRange: options.valueClipRange,
        where: `${where}, critic of agent ${i}`,
        maxRowsPerForward: chunk,
      });
      iacCritic.push(fit);
    }
  });
  if (setup.algorithm === "maac") {
    // The shared critic's target: the mean over agents of the shaped returns (see the module notes).
    const target = rollouts.map((ro, r) => ro.returns.map((_, g) => mean(shaped.map((s) => s[r]![g]!))));
    const fit = setup.critic.fit(criticRows(setup.critic, maacLayout(rollouts, type), target, old[0]!), {
      valueLossCoef: options.valueLossCoef,
      clipRange: options.valueClipRange,
      where: `${where}, centralized critic`,
      maxRowsPerForward: chunk,
    });
    criticMetrics("critic", fit, metrics);
  } else {
    iacCritic.forEach((m, i) => {
      metrics[`agent_${i}/value_loss`] = m.valueLoss;
      metrics[`agent_${i}/target_mean`] = m.targetMean;
      metrics[`agent_${i}/clip_fraction`] = m.clipFraction;
    });
    criticMetrics(
      "critic",
      {
        valueLoss: mean(iacCritic.map((m) => m.valueLoss)),
        valueMean: mean(iacCritic.map((m) => m.valueMean)),
        targetMean: mean(iacCritic.map((m) => m.targetMean)),
        clipFraction: mean(iacCritic.map((m) => m.clipFraction)),
      },
      metrics,
    );
  }
  metrics["turn_1/reward_mean"] = mean(rollouts.flatMap((r) => r.rewards));
  metrics["turn_1/expected_return"] = mean(rollouts.flatMap((r) => r.returns));
  metrics["rl/advantage_std"] = stdPop(allAdv);
  Object.assign(metrics, comlrlNames(metrics, agents.length));
  return metrics;
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

export interface ActorCriticEpochsOptions extends CollectionSettings {
  agents: readonly TrainableAgent[];
  setup: ActorCriticSetup;
  criticType: CriticType;
  /** num_generations (1 is allowed for maac/iac). */
  numGenerations: number;
  normalize: boolean;
  valueLossCoef: number;
  valueClipRange?: number | null | undefined;
  /** Items per update (mini-batch). */
  trainBatchSize: number;
  /**
   * Items sampled per collection (CoMLRL's rollout_buffer_size); default `trainBatchSize` (one
   * update per collection). When larger, V_old is computed once at collection and the buffer is
   * consumed in mini-batches of `trainBatchSize`, so later mini-batches clip against stale values.
   */
  rolloutBufferSize?: number | undefined;
  maxRowsPerForward?: number | undefined;
  label?: string;
  /** Once per collection, with the mean of its updates' metrics (plus `rl/updates`). */
  onBatch?: (report: BatchReport) => void | Promise<void>;
}

/**
 * On-policy actor-critic training over a fixed item set, the counterpart of `runRlEpochs`: per
 * epoch a seeded shuffle, then per collection of `rolloutBufferSize` items fresh rollouts,
 * optional shaping, V_old of every sample, and one `actorCriticUpdate` per mini-batch.
 */
export async function runActorCriticEpochs(o: ActorCriticEpochsOptions): Promise<void> {
  if (!Number.isInteger(o.numTrainEpochs) || o.numTrainEpochs < 0) throw new RangeError(`num_train_epochs must be an integer ≥ 0, got ${o.numTrainEpochs}`);
  if (!Number.isInteger(o.trainBatchSize) || o.trainBatchSize < 1) throw new RangeError(`train_batch_size must be an integer ≥ 1, got ${o.trainBatchSize}`);
  const buffer = o.rolloutBufferSize ?? o.trainBatchSize;
  if (!Number.isInteger(buffer) || buffer < 1) throw new RangeError(`rollout_buffer_size must be an integer ≥ 1, got ${buffer}`);
  if (o.formatters.length !== o.agents.length) throw new RangeError(`${o.formatters.length} formatter(s) for ${o.agents.length} agent(s)`);
  checkSetup(o.agents, o.setup);
  checkCriticType(o.criticType);
  const label = o.label ?? "";
  await runCollections({ ...o, itemsPerCollection: buffer }, (rollouts, shaped, p) => {
    const old = actorCriticValues(o.agents, o.setup, rollouts, o.criticType, o.maxRowsPerForward ?? 16);
    const all: Record<string, number>[] = [];
    for (let s = 0, u = 1; s < rollouts.length; s += o.trainBatchSize, u++) {
      const part = rollouts.slice(s, s + o.trainBatchSize);
      all.push(
        actorCriticUpdate(o.agents, o.setup, part, {
          criticType: o.criticType,
          normalize: o.normalize,
          valueLossCoef: o.valueLossCoef,
          valueClipRange: o.valueClipRange,
          penalties: shaped?.penalties.map((perAgent) => perAgent.slice(s, s + o.trainBatchSize)),
          oldValues: old.map((perAgent) => perAgent.slice(s, s + o.trainBatchSize)),
          where: `${label}epoch ${p.epoch}, batch ${p.batch}${buffer > o.trainBatchSize ? `, update ${u}` : ""}`,
          maxRowsPerForward: o.maxRowsPerForward,
        }),
      );
    }
    const metrics: Record<string, number> = {};
    for (const k of Object.keys(all[0] ?? {})) metrics[k] = mean(all.map((m) => m[k] ?? 0));
    metrics["rl/updates"] = all.length;
    return metrics;
  });
}

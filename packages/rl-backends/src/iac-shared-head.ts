/**
 * IAC with a shared head (`use_separate_critic=false`): independent actor-critic where each
 * agent's value is an `ActorValueHead` on the actor's own backbone. Single turn, on-policy,
 * one-step A2C as CoMLRL's.
 *
 * For agent i, item r and generation g, with joint return R_{r,g} and the agent's own penalty
 * p_{i,r,g} (the reference KL):
 *
 *   shaped return   R'_{i,r,g} = R_{r,g} − p_{i,r,g}
 *   advantage       A_{i,r,g}  = R'_{i,r,g} − V_old_{i,r,g}
 *   loss            L_i = L_π,i + value_loss_coef · L_V,i
 *
 * with L_π,i the mean over the agent's rows of −log π_i(y|x) · Â (policy-loss.ts) and L_V,i the
 * value loss (value-loss.ts). One forward pass over [prompt ; completion] gives both the
 * log-probs and the value: "v" reads the hidden state at the last prompt token (which, the model
 * being causal, is V(prompt)), "q" at the last completion token. L_i is differentiated with
 * respect to backbone and head: the backbone's gradient (policy and value) is stepped by the
 * agent's own optimizer, the head's by the head's optimizer.
 */
import { addGrads, globalGradNorm, mean, NonFiniteError, tf } from "@pbrl/core-tensor";
import { buildScoringBatch, gatherRows, matMul, selectedLogProbs, splitGrads, type CausalLM, type ScoringItem } from "@pbrl/models";
import type { TrainableAgent } from "@pbrl/preference-data";
import { agentAdvantages, recordAgentMetrics, recordBatchMetrics, recordIacCriticMetrics, type ActorCriticBatch } from "./actor-critic-batch.js";
import type { ActorValueHead, CriticFitMetrics, CriticType } from "./critic.js";
import { policyGradientLoss } from "./policy-loss.js";
import type { PolicyStepResult } from "./policy-step.js";
import type { Rollout } from "./rollouts.js";
import { policyRows } from "./update.js";
import { valueLoss, valueLossTerms } from "./value-loss.js";

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

/** V_old of every sample, `[agent][rollout][g]`: each agent's head on its own backbone, without gradients. */
export function sharedHeadValues(
  agents: readonly TrainableAgent[],
  heads: readonly ActorValueHead[],
  rollouts: readonly Rollout[],
  type: CriticType,
  batchSize: number,
): number[][][] {
  return agents.map((agent, i) => {
    const rows = policyRows(rollouts, i);
    const flat: number[] = [];
    for (let s = 0; s < rows.length; s += batchSize) {
      const { sums, values } = actorForward(agent.model, heads[i]!, rows.slice(s, s + batchSize), agent.padTokenId, type, false);
      flat.push(...values.dataSync());
      tf.dispose([sums, values]);
    }
    let k = 0;
    return rollouts.map((ro) => ro.returns.map(() => flat[k++]!));
  });
}

/** What agent i's value term reads: its head, and the targets and V_old of its rows. */
interface ValueTerm {
  head: ActorValueHead;
  type: CriticType;
  targets: number[];
  oldValues: number[];
  coef: number;
  clipRange: number | null | undefined;
}

/**
 * Agent i's step: mean(−log π · A) over its rows plus value_loss_coef · value loss through the
 * same forward pass (backbone stepped by the agent's optimizer, head by the head's).
 */
function sharedHeadStep(
  i: number,
  agent: TrainableAgent,
  rows: ScoringItem[],
  adv: number[],
  vt: ValueTerm,
  where: string,
  chunk: number | undefined,
): PolicyStepResult & { value: CriticFitMetrics } {
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
          const pl = policyGradientLoss(sums, a, n);
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

/** One update of IAC with shared heads: agent after agent, one combined step of backbone and head. */
export function sharedHeadUpdate(agents: readonly TrainableAgent[], heads: readonly ActorValueHead[], batch: ActorCriticBatch): Record<string, number> {
  const { rollouts, options } = batch;
  const metrics: Record<string, number> = {};
  const allAdv: number[] = [];
  const fits: CriticFitMetrics[] = [];
  agents.forEach((agent, i) => {
    const adv = agentAdvantages(batch, i);
    const vt: ValueTerm = {
      head: heads[i]!,
      type: batch.type,
      targets: batch.shaped[i]!.flat(),
      oldValues: batch.old[i]!.flat(),
      coef: options.valueLossCoef,
      clipRange: options.valueClipRange,
    };
    const step = sharedHeadStep(i, agent, policyRows(rollouts, i), adv, vt, options.where, options.maxRowsPerForward);
    recordAgentMetrics(metrics, i, adv, step, batch);
    allAdv.push(...adv);
    fits.push(step.value);
  });
  recordIacCriticMetrics(fits, metrics);
  recordBatchMetrics(metrics, rollouts, allAdv, agents.length);
  return metrics;
}

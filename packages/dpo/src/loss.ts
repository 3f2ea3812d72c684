/**
 * The MADPO objective. For agent i the margin is δᵢ = log πᵢ(wᵢ|hᵢ) − log πᵢ(lᵢ|hᵢ) (summed
 * token log-probs), the joint margin Δ = Σᵢ δᵢ, and the loss L = −E[log σ(η Δ)] with η = dpo_beta.
 * Agent i trains on its own live margin plus the others' detached margins, so its gradient is
 * −η σ(−η Δ) ∇δᵢ: the joint loss's gradient with respect to its own parameters.
 */
import { mean, tf } from "@pbrl/core-tensor";
import { negLogSigmoid } from "@pbrl/preference-data";

/** Joint margins Δ per pair from per-agent margins `margins[agent][pair]`. */
export function jointMargins(margins: readonly (readonly number[])[]): number[] {
  const pairs = margins[0]?.length ?? 0;
  return Array.from({ length: pairs }, (_, p) => margins.reduce((sum, m) => sum + m[p]!, 0));
}

/** The MADPO loss of a batch, mean over pairs of −log σ(β Δ). */
export function madpoLoss(joint: readonly number[], beta: number): number {
  if (joint.length === 0) return 0;
  return joint.reduce((s, d) => s + negLogSigmoid(beta * d), 0) / joint.length;
}

/**
 * Agent i's differentiable loss: mean over pairs of −log σ(β (δᵢ + Σ_{k≠i} δₖ)), written as
 * softplus(−x): tf.logSigmoid's gradient reads its input from a closure and fails once a tidy
 * has released it.
 */
export function agentLoss(ownMargins: tf.Tensor1D, othersDetached: Float32Array, beta: number): tf.Scalar {
  return tf.tidy(() => tf.mean(tf.softplus(tf.mul(tf.add(ownMargins, tf.tensor1d(othersDetached)), -beta))) as tf.Scalar);
}

/** Sum of the other agents' margins for each pair: Σ_{k≠i} margins[k][p]. */
export function othersSum(margins: readonly (readonly number[])[], agent: number): Float32Array {
  const pairs = margins[0]?.length ?? 0;
  const out = new Float32Array(pairs);
  margins.forEach((m, k) => {
    // Stryker disable next-line EqualityOperator: p = pairs writes past a Float32Array's end, which is ignored
    if (k !== agent) for (let p = 0; p < pairs; p++) out[p]! += m[p]!;
  });
  return out;
}

export interface MarginMetrics {
  loss: number;
  "joint/margin": number;
  "joint/accuracy": number;
  [agentMargin: `agent_${number}/margin`]: number;
}

/** Batch metrics from the detached margins (before the update). */
export function marginMetrics(margins: readonly (readonly number[])[], beta: number): MarginMetrics {
  const joint = jointMargins(margins);
  const metrics: MarginMetrics = {
    loss: madpoLoss(joint, beta),
    "joint/margin": mean(joint),
    "joint/accuracy": joint.length === 0 ? 0 : joint.filter((d) => d > 0).length / joint.length,
  };
  margins.forEach((m, i) => (metrics[`agent_${i}/margin`] = mean(m)));
  return metrics;
}

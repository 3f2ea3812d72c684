import { tf } from "@pbrl/core-tensor";
import { negLogSigmoid } from "@pbrl/preference-data";

/**
 * Bradley–Terry loss mean(−log σ(s_w − s_l)) from score differences, differentiable. Written as
 * softplus(−x): tf.logSigmoid's gradient fails in tfjs when its input is an intermediate tensor.
 */
export function bradleyTerryLoss(diffs: tf.Tensor1D): tf.Scalar {
  return tf.tidy(() => tf.mean(tf.softplus(tf.neg(diffs))) as tf.Scalar);
}

/** Metrics of a set of pairs from their score differences s_w − s_l. */
export interface PairMetrics {
  "reward/loss": number;
  /** Fraction of pairs with s_w > s_l. */
  "reward/accuracy": number;
  /** Mean of s_w − s_l. */
  "reward/margin": number;
}

export function pairMetrics(diffs: ArrayLike<number>): PairMetrics {
  const n = diffs.length;
  let loss = 0;
  let wins = 0;
  let margin = 0;
  for (let i = 0; i < n; i++) {
    const d = diffs[i]!;
    loss += negLogSigmoid(d);
    margin += d;
    if (d > 0) wins++;
  }
  return { "reward/loss": loss / n, "reward/accuracy": wins / n, "reward/margin": margin / n };
}

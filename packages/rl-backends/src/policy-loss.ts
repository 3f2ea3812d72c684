import { tf } from "@pbrl/core-tensor";

/**
 * The policy-gradient loss of a batch (or of one chunk of it): Σ_rows −log π(y|x) · A / n, with
 * `logProbSums` each row's sequence log-prob (sum over its completion tokens, EOS included) and
 * `advantages` one per row. `denominator` is the row count of the whole batch, so the losses of
 * chunks add up to the batch mean: CoMLRL's one-step A2C actor loss and the REINFORCE family's.
 */
export function policyGradientLoss(logProbSums: tf.Tensor1D, advantages: readonly number[], denominator: number): tf.Scalar {
  return tf.div(tf.sum(tf.mul(tf.neg(logProbSums), tf.tensor1d(advantages as number[]))), denominator) as tf.Scalar;
}

/**
 * −log σ(x), computed stably in float64 (softplus(−x)): the negative log-likelihood of a
 * preference whose margin is x under the Bradley–Terry model. MADPO's loss (x = β·Δ) and the
 * joint reward model's loss (x = s_w − s_l) are both this.
 */
export function negLogSigmoid(x: number): number {
  return x >= 0 ? Math.log1p(Math.exp(-x)) : -x + Math.log1p(Math.exp(x));
}

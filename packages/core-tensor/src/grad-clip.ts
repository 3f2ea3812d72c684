import { tf } from "./tf.js";

/** The global L2 norm over all gradients, as torch.nn.utils.clip_grad_norm_ computes it. */
export function globalGradNorm(grads: Iterable<tf.Tensor>): number {
  const parts: number[] = [];
  for (const g of grads) parts.push(tf.tidy(() => tf.sum(tf.square(g)).dataSync()[0]!));
  return Math.sqrt(parts.reduce((a, b) => a + b, 0));
}

/**
 * Scales gradients so their global norm is at most `maxNorm` (torch semantics: coefficient
 * maxNorm / (norm + 1e-6), clamped to 1). Returns new gradient tensors and the norm before
 * clipping; the input tensors are disposed when replaced. A non-finite norm is returned as is,
 * with the gradients unchanged, so the caller can report where it arose.
 */
export function clipGradNorm(grads: Map<string, tf.Tensor>, maxNorm: number): { grads: Map<string, tf.Tensor>; totalNorm: number } {
  if (!(maxNorm > 0)) throw new RangeError(`max grad norm must be > 0, got ${maxNorm}`);
  const totalNorm = globalGradNorm(grads.values());
  const coef = maxNorm / (totalNorm + 1e-6);
  if (!Number.isFinite(totalNorm) || coef >= 1) return { grads, totalNorm };
  const out = new Map<string, tf.Tensor>();
  for (const [name, g] of grads) {
    out.set(name, tf.mul(g, coef));
    g.dispose();
  }
  return { grads: out, totalNorm };
}

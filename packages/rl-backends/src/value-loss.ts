import { mean, tf } from "@pbrl/core-tensor";

/**
 * The critics' value loss (MAAC's centralized critic, IAC's separate critics and shared heads).
 *
 * Per sample, with prediction V, target R (the shaped return) and, when clipping, the value
 * V_old the same critic predicted for that sample when the batch was collected:
 *
 *   unclipped:  ℓ = ½ (V − R)²
 *   clipped:    V_c = V_old + clip(V − V_old, −ε, +ε)
 *               ℓ = ½ max((V − R)², (V_c − R)²)        (PPO's clipped value loss, ε = value_clip_range)
 *
 * and the loss is the mean of ℓ over the samples (then scaled by `value_loss_coef` by the
 * callers). The ½ is the usual PPO convention; CoMLRL writes (R − V)² without it, which only
 * rescales the gradient by 2 (`value_loss_coef` absorbs it).
 *
 * Gradient: dℓ/dV = V − R when the unclipped term is the larger (ties included: inside the clip
 * range both terms are equal), else 0 — the clipped term is then constant in V, which is what
 * stops a value from moving more than ε away from V_old in one batch. Clipping matters only when
 * V has already moved away from V_old, i.e. from the second mini-batch of a rollout buffer on
 * (`rolloutBufferSize` > `trainBatchSize` in the runner); on the first update V = V_old exactly.
 */
export interface ValueLossTerms {
  /** ℓ per sample (the ½ included). */
  losses: number[];
  /** dℓ/dV per sample. */
  grads: number[];
  /** Per sample: the clipped term was the larger one (its gradient is 0). */
  clipped: boolean[];
}

export interface ValueLossOptions {
  /** V_old per sample; required with `clipRange`. */
  oldValues?: readonly number[] | undefined;
  /** ε = value_clip_range (> 0); undefined or null: no clipping. */
  clipRange?: number | null | undefined;
}

function checkInputs(values: ArrayLike<number>, targets: readonly number[], o: ValueLossOptions): void {
  const n = values.length;
  if (targets.length !== n) throw new RangeError(`value loss: ${targets.length} targets for ${n} values`);
  const clip = o.clipRange;
  if (clip !== undefined && clip !== null) {
    if (!(clip > 0) || !Number.isFinite(clip)) throw new RangeError(`value_clip_range must be a finite number > 0 (or null for no clipping), got ${clip}`);
    if (o.oldValues === undefined) throw new RangeError("value loss: clipping (value_clip_range) needs the old values");
  }
  if (o.oldValues !== undefined && o.oldValues.length !== n) throw new RangeError(`value loss: ${o.oldValues.length} old values for ${n} values`);
}

/** The per-sample terms of the value loss, computed in float64 on the host. */
export function valueLossTerms(values: ArrayLike<number>, targets: readonly number[], o: ValueLossOptions = {}): ValueLossTerms {
  checkInputs(values, targets, o);
  const clip = o.clipRange ?? undefined;
  const out: ValueLossTerms = { losses: [], grads: [], clipped: [] };
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    const r = targets[i]!;
    const un = (v - r) ** 2;
    if (clip === undefined) {
      out.losses.push(0.5 * un);
      out.grads.push(v - r);
      out.clipped.push(false);
      continue;
    }
    const old = o.oldValues![i]!;
    const vc = old + Math.min(Math.max(v - old, -clip), clip);
    const cl = (vc - r) ** 2;
    const clippedWins = cl > un;
    out.losses.push(0.5 * Math.max(un, cl));
    out.grads.push(clippedWins ? 0 : v - r);
    out.clipped.push(clippedWins);
  }
  return out;
}

/** The mean value loss of plain numbers (the metric, and the reference for tests). */
export function meanValueLoss(values: ArrayLike<number>, targets: readonly number[], o: ValueLossOptions = {}): number {
  const { losses } = valueLossTerms(values, targets, o);
  return mean(losses);
}

/**
 * The differentiable value loss Σ ℓ / `denominator` (default: the number of values, i.e. the
 * mean); a chunk of a larger batch passes the batch size so the chunks' losses add up to the
 * batch mean. Written as a custom-gradient op whose gradient is computed on the host from the
 * forward values: tfjs's wasm backend has no gradient for the comparisons a max/clip needs.
 */
export function valueLoss(values: tf.Tensor1D, targets: readonly number[], o: ValueLossOptions & { denominator?: number } = {}): tf.Scalar {
  const n = values.shape[0];
  checkInputs({ length: n }, targets, o);
  const denom = o.denominator ?? n;
  if (!(denom > 0)) throw new RangeError(`value loss: denominator must be > 0, got ${denom}`);
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const v = args[0] as tf.Tensor1D;
    const terms = valueLossTerms(v.dataSync(), targets, o);
    const value = tf.scalar(terms.losses.reduce((a, b) => a + b, 0) / denom);
    const grad = Float32Array.from(terms.grads, (g) => g / denom);
    const gradFunc = (dy: tf.Tensor): tf.Tensor => tf.tidy(() => tf.mul(tf.tensor1d(grad), dy));
    return { value, gradFunc };
  });
  return op(values) as tf.Scalar;
}

/**
 * Causal grouped-query attention of one forward call, for every layer that shares its window: on
 * the native and libtorch backends core-tensor's fused kernel (which builds the causal mask itself
 * from a key mask), elsewhere — and for a sliding window over several queries, which that kernel
 * cannot express — tfjs ops with an additive bias. The constants (key mask
 * or bias) are built once per call, on the host and outside any tape (see attention-mask.ts).
 */
import { fusedAttention, fusedKernelsActive, tf } from "@pbrl/core-tensor";
import { attentionBias, windowedKeyMask } from "./attention-mask.js";
import { matMul } from "./ops.js";

export interface AttentionShape {
  batch: number;
  /** Query positions of this call. */
  queries: number;
  /** Cached positions before them. */
  past: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** [batch, past + queries], 1 for a real token, 0 for padding; omitted means no padding. */
  keyMask?: ArrayLike<number>;
  /** Multiplier of q·kᵀ (default 1/√headDim). */
  scale?: number;
  /** A query sees only the last `window` positions, itself included; omitted: every earlier one. */
  window?: number;
}

export class CausalAttention {
  private readonly scale: number;
  /** int32 [B, S] for the fused kernel; the additive bias [B or 1, 1, rep·T, S] elsewhere. */
  private readonly mask: tf.Tensor;
  private readonly fused: boolean;

  constructor(private readonly shape: AttentionShape) {
    const { batch: b, queries: t, past, heads, kvHeads, headDim, window } = shape;
    this.scale = shape.scale ?? 1 / Math.sqrt(headDim);
    const s = past + t;
    if (shape.keyMask !== undefined && shape.keyMask.length !== b * s) {
      throw new RangeError(`attention mask has ${shape.keyMask.length} entries, expected batch ${b} × ${s} positions`);
    }
    // The fused kernel applies the causal rule to a per-row key mask: a window fits in that mask
    // when it hides nothing (s ≤ window) or when there is a single query.
    const windowFits = window === undefined || s <= window || t === 1;
    this.fused = fusedKernelsActive() && windowFits;
    if (this.fused) {
      const keys = shape.keyMask === undefined ? new Int32Array(b * s).fill(1) : Int32Array.from(shape.keyMask, (m) => (m === 1 ? 1 : 0));
      this.mask = tf.tensor2d(windowedKeyMask(keys, b, window), [b, s], "int32");
    } else {
      const bias = attentionBias({
        batch: b,
        queries: t,
        past,
        repeat: heads / kvHeads,
        ...(shape.keyMask !== undefined ? { keyMask: shape.keyMask } : {}),
        ...(window !== undefined ? { window } : {}),
      });
      this.mask = tf.tensor4d(bias.data, bias.shape);
    }
  }

  /** q [B, H, T, D] over k, v [B, KV, S, D] → [B·T, H·D], the heads side by side per position. */
  apply(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D): tf.Tensor2D {
    const { batch: b, queries: t, heads, kvHeads, headDim: d } = this.shape;
    if (this.fused) return tf.reshape(fusedAttention(q, k, v, this.mask as tf.Tensor2D, this.scale), [b * t, heads * d]);
    // The `rep` query heads that share a key/value head are stacked along the query axis,
    // [B, KV, rep·T, D], so that keys are never copied per query head.
    const qg = tf.reshape(q, [b, kvHeads, (heads / kvHeads) * t, d]);
    const probs = tf.softmax(tf.add(tf.mul(matMul(qg, k, false, true), this.scale), this.mask));
    return tf.reshape(tf.transpose(tf.reshape(matMul(probs, v), [b, heads, t, d]), [0, 2, 1, 3]), [b * t, heads * d]);
  }

  /** Keeps the mask through enclosing tidies (a recomputing backward pass needs it after the forward call's scope). */
  keep(): void {
    tf.keep(this.mask);
  }

  dispose(): void {
    this.mask.dispose();
  }
}

/**
 * Fused ops: one kernel on the native backend, where pbrl's addon implements them, and the
 * equivalent sequence of tfjs ops elsewhere (the same ops, in the same order, that callers used
 * before, so the wasm and cpu results do not change).
 */
import {
  PBRL_ADAMW,
  PBRL_ATTENTION,
  PBRL_ATTENTION_GRAD,
  PBRL_LOG_SOFTMAX_GRAD,
  PBRL_LOG_SOFTMAX_SELECT,
  PBRL_RMS_NORM,
  PBRL_SCATTER_ADD_ROWS,
  PBRL_ROPE,
  PBRL_RMS_NORM_GRAD,
  PBRL_SWIGLU,
  PBRL_SWIGLU_GRAD,
  type AdamWAttrName,
} from "./fused-kernel-names.js";
import { fusedKernelsActive as onNative } from "./backend-traits.js";
import { tf } from "./tf.js";

const run = (kernel: string, inputs: Record<string, tf.Tensor>, attrs: Record<string, number> = {}): tf.Tensor | tf.Tensor[] =>
  tf.engine().runKernel(kernel, inputs as unknown as tf.NamedTensorMap, attrs) as tf.Tensor | tf.Tensor[];

/**
 * The selected log-probabilities log softmax(x)[i, targets[i]] of logits x [N, V] as [N], and
 * lse = logsumexp(x, 1) as [N, 1] (what {@link logSoftmaxSelectGrad} needs). On native one threaded
 * pass; elsewhere tfjs's logSumExp and a gather. Not differentiable by itself (see
 * models' selectedLogProbs); targets must lie in [0, V).
 */
export function logSoftmaxSelect(x: tf.Tensor2D, targets: Int32Array): { value: tf.Tensor1D; lse: tf.Tensor2D } {
  const [n, vocab] = x.shape;
  if (targets.length !== n) throw new RangeError(`logSoftmaxSelect: ${targets.length} targets for ${n} rows`);
  for (const t of targets) if (t < 0 || t >= vocab) throw new RangeError(`logSoftmaxSelect: target ${t} outside the vocabulary [0, ${vocab})`);
  if (onNative() && x.dtype === "float32") {
    const [value, lse] = tf.tidy(() => run(PBRL_LOG_SOFTMAX_SELECT, { x, targets: tf.tensor1d(targets, "int32") })) as [tf.Tensor1D, tf.Tensor2D];
    return { value, lse };
  }
  const flat = Int32Array.from(targets, (t, i) => i * vocab + t); // positions in the flattened logits
  const lse = tf.logSumExp(x, 1, true) as tf.Tensor2D;
  const value = tf.tidy(() => tf.sub(tf.gather(tf.reshape(x, [-1]), tf.tensor1d(flat, "int32")), tf.reshape(lse, [-1]))) as tf.Tensor1D;
  return { value, lse };
}

/**
 * The gradient of a row gather: [rows, cols] zeros with dy [N, cols]'s row r added into row
 * indices[r]. On native one threaded kernel; elsewhere on the host (wasm has no UnsortedSegmentSum
 * kernel, and the cpu backend's takes most of a training step for an 8000-row embedding).
 */
export function scatterAddRows(dy: tf.Tensor, indices: Int32Array, rows: number): tf.Tensor2D {
  const cols = dy.shape[dy.shape.length - 1]!;
  if (dy.size !== indices.length * cols) throw new RangeError(`scatterAddRows: ${indices.length} indices for a gradient of shape [${dy.shape.join(", ")}]`);
  for (const i of indices) if (i < 0 || i >= rows) throw new RangeError(`scatterAddRows: index ${i} outside [0, ${rows})`);
  if (onNative() && dy.dtype === "float32") {
    return tf.tidy(() =>
      run(PBRL_SCATTER_ADD_ROWS, { dy: tf.reshape(dy, [indices.length, cols]), indices: tf.tensor1d(indices, "int32") }, { rows }),
    ) as tf.Tensor2D;
  }
  const g = dy.dataSync();
  const acc = new Float32Array(rows * cols);
  for (let r = 0; r < indices.length; r++) {
    const dst = indices[r]! * cols;
    const src = r * cols;
    for (let c = 0; c < cols; c++) acc[dst + c]! += g[src + c]!;
  }
  return tf.tensor2d(acc, [rows, cols]);
}

/**
 * The gradient of the selected log-probabilities log softmax(x)[i, targets[i]] with respect to
 * the logits x [N, V], given lse = logsumexp(x, 1) as [N, 1] and the upstream gradient dy [N]:
 * dy[i] · (onehot(targets)[i, j] − softmax(x)[i, j]). On native a single pass with one output
 * instead of five [N, V] temporaries; targets must lie in [0, V).
 */
export function logSoftmaxSelectGrad(x: tf.Tensor2D, lse: tf.Tensor2D, targets: Int32Array, dy: tf.Tensor): tf.Tensor2D {
  const [n, vocab] = x.shape;
  if (targets.length !== n) throw new RangeError(`logSoftmaxSelectGrad: ${targets.length} targets for ${n} rows`);
  return tf.tidy(() => {
    const t = tf.tensor1d(targets, "int32");
    if (onNative()) {
      for (const v of targets) if (v < 0 || v >= vocab) throw new RangeError(`logSoftmaxSelectGrad: target ${v} outside [0, ${vocab})`);
      const inputs = { x, lse: tf.cast(lse, "float32"), targets: t, dy: tf.reshape(tf.cast(dy, "float32"), [n]) };
      return tf.engine().runKernel(PBRL_LOG_SOFTMAX_GRAD, inputs as unknown as tf.NamedTensorMap, {}) as tf.Tensor2D;
    }
    const softmax = tf.exp(tf.sub(x, lse));
    // int32 then cast: the wasm OneHot kernel writes integer bits into float32 outputs.
    const onehot = tf.cast(tf.oneHot(t, vocab), "float32");
    return tf.mul(tf.sub(onehot, softmax), tf.reshape(dy, [n, 1]));
  });
}

/**
 * Llama's RMSNorm over the last axis of x [N, H] with weight [H]: w ⊙ x / √(mean(x²) + eps). On
 * native one kernel forward and one backward (saving one float per row); elsewhere the tfjs ops,
 * differentiated by tfjs.
 */
export function rmsNorm(x: tf.Tensor2D, weight: tf.Tensor1D, eps: number): tf.Tensor2D {
  if (!onNative()) return tf.mul(weight, tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), eps)))) as tf.Tensor2D;
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, w] = args as [tf.Tensor2D, tf.Tensor1D];
    const save = args[2] as tf.GradSaveFunc;
    const [y, rstd] = run(PBRL_RMS_NORM, { x, weight: w }, { eps }) as [tf.Tensor2D, tf.Tensor1D];
    save([x, w, rstd]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [sx, sw, sr] = saved as [tf.Tensor, tf.Tensor, tf.Tensor];
      return run(PBRL_RMS_NORM_GRAD, { x: sx, weight: sw, rstd: sr, dy }) as tf.Tensor[];
    };
    return { value: y, gradFunc };
  });
  return op(x, weight) as tf.Tensor2D;
}

/**
 * SwiGLU's gating, silu(gate) ⊙ up = gate·σ(gate) ⊙ up, for gate and up of one shape. On native
 * one kernel forward and one backward; elsewhere the tfjs ops, differentiated by tfjs.
 */
export function swiglu<T extends tf.Tensor>(gate: T, up: T): T {
  if (!onNative()) return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up);
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [g, u] = args as [tf.Tensor, tf.Tensor];
    const save = args[2] as tf.GradSaveFunc;
    save([g, u]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [sg, su] = saved as [tf.Tensor, tf.Tensor];
      return run(PBRL_SWIGLU_GRAD, { gate: sg, up: su, dy }) as tf.Tensor[];
    };
    return { value: run(PBRL_SWIGLU, { gate: g, up: u }) as tf.Tensor, gradFunc };
  });
  return op(gate, up) as T;
}

/**
 * Rotary position embedding: x·cos + rot(x)·sin with rot(x) = concat(−x₂, x₁) over the last axis,
 * for x [B, H, T, D] and tables cos, sin [B, 1, T, D] (constants: no gradient flows to them). On
 * native one kernel forward and one backward; elsewhere the tfjs ops, differentiated by tfjs.
 */
export function rotary(x: tf.Tensor4D, cos: tf.Tensor4D, sin: tf.Tensor4D): tf.Tensor4D {
  const [b, , t, d] = x.shape;
  const tables = [b, 1, t, d];
  if (!onNative() || d % 2 !== 0 || cos.shape.some((n, i) => n !== tables[i]) || sin.shape.some((n, i) => n !== tables[i])) {
    const x1 = tf.slice(x, [0, 0, 0, 0], [-1, -1, -1, d / 2]);
    const x2 = tf.slice(x, [0, 0, 0, d / 2], [-1, -1, -1, d / 2]);
    return tf.add(tf.mul(x, cos), tf.mul(tf.concat([tf.neg(x2), x1], 3), sin));
  }
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    // Saved, not captured: callers dispose the tables once the forward pass is built.
    (args[1] as tf.GradSaveFunc)([cos, sin]);
    const value = run(PBRL_ROPE, { x: args[0] as tf.Tensor, cos, sin }, { backward: 0 }) as tf.Tensor4D;
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor => run(PBRL_ROPE, { x: dy, cos: saved[0]!, sin: saved[1]! }, { backward: 1 }) as tf.Tensor;
    return { value, gradFunc };
  });
  return op(x) as tf.Tensor4D;
}

/**
 * Grouped-query causal attention on the native backend: softmax(scale·q·kᵀ + mask)·v for q
 * [B, H, T, D] and k, v [B, KV, S, D] (S = past + T, H a multiple of KV), where query i sees key j
 * when j ≤ past + i and keyMask[b, j] = 1 (int32 [B, S], a constant); returns [B, T, H, D], the
 * heads side by side. One kernel forward and one backward, which keeps only the probabilities.
 * Native only: on other backends models' attention runs it as tfjs ops with an additive bias.
 */
export function fusedAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, keyMask: tf.Tensor2D, scale: number): tf.Tensor4D {
  if (!onNative()) throw new Error(`fusedAttention runs on the native and libtorch backends only (active: ${tf.getBackend()})`);
  const [b, h, t, d] = q.shape;
  const [kb, kv, s, kd] = k.shape;
  const ok =
    kb === b &&
    kd === d &&
    kv > 0 &&
    h % kv === 0 &&
    s >= t &&
    v.shape.every((n, i) => n === k.shape[i]) &&
    keyMask.dtype === "int32" &&
    keyMask.shape[0] === b &&
    keyMask.shape[1] === s;
  if (!ok)
    throw new RangeError(
      `fusedAttention: q [${q.shape}], k [${k.shape}], v [${v.shape}] and keyMask [${keyMask.shape}] (${keyMask.dtype}) do not fit together`,
    );
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [qi, ki, vi] = args as [tf.Tensor4D, tf.Tensor4D, tf.Tensor4D];
    const save = args[3] as tf.GradSaveFunc;
    const [out, probs] = run(PBRL_ATTENTION, { q: qi, k: ki, v: vi, keyMask }, { scale }) as [tf.Tensor4D, tf.Tensor4D];
    save([qi, ki, vi, keyMask, probs]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [sq, sk, sv, sm, sp] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
      return run(PBRL_ATTENTION_GRAD, { q: sq, k: sk, v: sv, keyMask: sm, probs: sp, dy }, { scale }) as tf.Tensor[];
    };
    return { value: out, gradFunc };
  });
  return op(q, k, v) as tf.Tensor4D;
}

/** The scalars of one AdamW step of one parameter (see {@link adamwStep}). */
export interface AdamWScalars {
  lr: number;
  weightDecay: number;
  betas: readonly [number, number];
  eps: number;
  /** 1 − β1^t and √(1 − β2^t) for the parameter's step count t. */
  bc1: number;
  bc2Sqrt: number;
}

/**
 * One AdamW step (torch.optim.AdamW) of parameter p with gradient g and moments m, v: returns the
 * new [p, m, v] as new tensors. On native one threaded pass; elsewhere the tfjs ops.
 */
export function adamwStep(p: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, k: AdamWScalars): [tf.Tensor, tf.Tensor, tf.Tensor] {
  const [b1, b2] = k.betas;
  if (onNative() && p.dtype === "float32" && g.dtype === "float32") {
    const attrs: Record<AdamWAttrName, number> = {
      decay: 1 - k.lr * k.weightDecay,
      b1,
      c1: 1 - b1,
      b2,
      c2: 1 - b2,
      bc2Sqrt: k.bc2Sqrt,
      eps: k.eps,
      stepSize: k.lr / k.bc1,
    };
    return run(PBRL_ADAMW, { p, g, m, v }, attrs) as [tf.Tensor, tf.Tensor, tf.Tensor];
  }
  return tf.tidy(() => {
    const decayed = k.weightDecay !== 0 ? tf.mul(p, 1 - k.lr * k.weightDecay) : p;
    const mNew = tf.add(tf.mul(m, b1), tf.mul(g, 1 - b1));
    const vNew = tf.add(tf.mul(v, b2), tf.mul(tf.square(g), 1 - b2));
    const denom = tf.add(tf.div(tf.sqrt(vNew), k.bc2Sqrt), k.eps);
    return [tf.sub(decayed, tf.mul(tf.div(mNew, denom), k.lr / k.bc1)), mNew, vNew];
  });
}

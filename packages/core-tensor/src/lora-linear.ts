import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";
import type { RngStream } from "./rng.js";
import { tf } from "./tf.js";

/** Whether {@link loraLinear} runs here: on libtorch, whose addon has the fused kernels. */
export function loraLinearFused(): boolean {
  return tf.getBackend() === LIBTORCH_BACKEND_NAME;
}

/**
 * A linear layer of a frozen weight W [out, in] (and bias [out]) with a LoRA update:
 * x·Wᵀ (+ bias) + s·(dropout(x)·Aᵀ)·Bᵀ for x [N, in], A [r, in] and B [out, r], differentiable in
 * x, A and B (W and the bias get no gradient), as one addon call each way (only where
 * {@link loraLinearFused}). Dropout, when given, zeroes each entry of x with probability p and
 * scales the rest by 1 / (1 − p), the mask dropoutMask draws from `rng` for x's shape (two keys;
 * the backward pass draws the same mask from them again).
 */
export function loraLinear(
  x: tf.Tensor2D,
  weight: tf.Tensor2D,
  bias: tf.Tensor1D | undefined,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scaling: number,
  dropout: { rng: RngStream; p: number } | undefined,
): tf.Tensor2D {
  const backend = tf.backend() as unknown as LibtorchBackend;
  const p = dropout?.p ?? 0;
  const keep = 1 / (1 - p);
  const id = (t: tf.Tensor): number => backend.id(t as unknown as tf.TensorInfo);
  const made = (ref: number[]): tf.Tensor => tf.engine().makeTensorFromTensorInfo(backend.out(ref));
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xi, ai, bi] = args as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
    const save = args[3] as tf.GradSaveFunc;
    const state = dropout === undefined ? null : Uint32Array.from(dropout.rng.getState());
    const refs = backend.addon.loraLinear(id(xi), id(weight), bias === undefined ? null : id(bias), id(ai), id(bi), state, scaling, p, keep);
    if (state !== null) dropout!.rng.setState([state[0]!, state[1]!, state[2]!, state[3]!]);
    const [out, low, keys] = refs.map(made) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
    save([xi, ai, bi, low, keys]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [sx, sa, sb, sl, sk] = saved.map(id) as [number, number, number, number, number];
      return backend.addon.loraLinearBackward(id(dy), sx, id(weight), sa, sb, sl, sk, scaling, p, keep).map(made);
    };
    return { value: out, gradFunc };
  });
  return op(x, a, b) as tf.Tensor2D;
}

import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";
import type { RngStream } from "./rng.js";
import { tf } from "./tf.js";

/** Whether {@link loraUpdate} runs here: on libtorch, whose addon has the fused kernel. */
export function loraUpdateFused(): boolean {
  return tf.getBackend() === LIBTORCH_BACKEND_NAME;
}

/**
 * A LoRA adapter's update of a linear layer's output, y + s·(dropout(x)·Aᵀ)·Bᵀ for y [N, out],
 * x [N, in], A [r, in] and B [out, r], differentiable in all four, as one addon call each way
 * (only where {@link loraUpdateFused}). Dropout, when given, zeroes each entry of x with
 * probability p and scales the rest by 1 / (1 − p), the mask dropoutMask draws from `rng` for x's
 * shape (two keys; the backward pass draws the same mask from them again).
 */
export function loraUpdate(
  y: tf.Tensor2D,
  x: tf.Tensor2D,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scaling: number,
  dropout: { rng: RngStream; p: number } | undefined,
): tf.Tensor2D {
  const backend = tf.backend() as unknown as LibtorchBackend;
  const keep = dropout === undefined ? 1 : 1 / (1 - dropout.p);
  const made = (ref: number[]): tf.Tensor => tf.engine().makeTensorFromTensorInfo(backend.out(ref));
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [yi, xi, ai, bi] = args as tf.Tensor2D[];
    const save = args[4] as tf.GradSaveFunc;
    const state = dropout === undefined ? null : Uint32Array.from(dropout.rng.getState());
    const id = (t: tf.Tensor): number => backend.id(t as unknown as tf.TensorInfo);
    const refs = backend.addon.loraForward(id(yi!), id(xi!), id(ai!), id(bi!), state, scaling, dropout?.p ?? 0, keep);
    if (state !== null) dropout!.rng.setState([state[0]!, state[1]!, state[2]!, state[3]!]);
    const [out, low, keys] = refs.map(made) as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D];
    save([xi!, ai!, bi!, low, keys]);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
      const [sx, sa, sb, sl, sk] = saved.map(id) as [number, number, number, number, number];
      return [dy, ...backend.addon.loraBackward(id(dy), sx, sa, sb, sl, sk, scaling, dropout?.p ?? 0, keep).map(made)];
    };
    return { value: out, gradFunc };
  });
  return op(y, x, a, b) as tf.Tensor2D;
}

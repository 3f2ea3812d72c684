/**
 * Fused ops: one kernel on the native backend, where pbrl's addon implements them, and the
 * equivalent sequence of tfjs ops elsewhere (the same ops, in the same order, that callers used
 * before, so the wasm and cpu results do not change).
 */
import { PBRL_LOG_SOFTMAX_GRAD } from "./native-backend.js";
import { tf } from "./tf.js";

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
    if (tf.getBackend() === "native") {
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

/**
 * Differentiable building blocks that work on every tfjs backend.
 *
 * The wasm backend (tfjs 4.22) has no UnsortedSegmentSum kernel, so the built-in gradient of
 * `tf.gather` fails there; GatherNd has no gradient at all; and its OneHot kernel returns garbage
 * for a float32 output dtype. Both ops below therefore carry their own gradients, computed from
 * host-side indices that are known before the tape starts.
 */
import { logSoftmaxSelect, logSoftmaxSelectGrad, scatterAddRows, tf, transposesAreFree } from "@pbrl/core-tensor";

/**
 * Rows `indices` of a 2-D tensor: an embedding lookup, or picking hidden states at chosen
 * positions. Gradient: the output gradient scatter-added back into the selected rows (core-tensor's
 * scatterAddRows). The tensorflow backend's native kernel is used as is.
 */
export function gatherRows(x: tf.Tensor2D, indices: Int32Array): tf.Tensor2D {
  const rows = x.shape[0];
  for (const i of indices) if (i < 0 || i >= rows) throw new RangeError(`gatherRows: index ${i} outside [0, ${rows})`);
  // tensorflow has the gradient kernel; a frozen table (a LoRA adapter's base) needs no gradient.
  if (tf.getBackend() === "tensorflow" || isFrozen(x)) return tf.tidy(() => tf.gather(x, tf.tensor1d(indices, "int32")));
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const input = args[0] as tf.Tensor;
    const value = tf.tidy(() => tf.gather(input, tf.tensor1d(indices, "int32"))) as tf.Tensor2D;
    const gradFunc = (dy: tf.Tensor): tf.Tensor => scatterAddRows(dy, indices, rows);
    return { value, gradFunc };
  });
  return op(x) as tf.Tensor2D;
}

/**
 * log softmax(logits)[i, targets[i]] for each row i, fused: the forward pass needs only the
 * row's log-sum-exp and one gathered logit, and the gradient is onehot − softmax, so the full
 * [N, V] log-softmax is never kept for the backward pass.
 */
export function selectedLogProbs(logits: tf.Tensor2D, targets: Int32Array): tf.Tensor1D {
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const x = args[0] as tf.Tensor2D;
    const save = args[1] as tf.GradSaveFunc;
    const { value, lse } = logSoftmaxSelect(x, targets);
    save([x, lse]);
    lse.dispose();
    // (onehot − softmax) · dy: one fused kernel on the native backend, tfjs ops elsewhere.
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor => {
      const [xs, lses] = saved as [tf.Tensor2D, tf.Tensor2D];
      return logSoftmaxSelectGrad(xs, lses, targets, dy);
    };
    return { value, gradFunc };
  });
  return op(logits) as tf.Tensor1D;
}

function transposeLast2(x: tf.Tensor): tf.Tensor {
  const r = x.rank;
  return tf.transpose(x, [...Array.from({ length: r - 2 }, (_, i) => i), r - 1, r - 2]);
}

/**
 * matMul(a, b, transposeA, transposeB), forward and backward, with only non-transposed kernel
 * calls. tfjs's wasm kernel runs 10× slower when asked to transpose an operand (about 2.5 vs
 * 30 GFLOPS measured), while an explicit transpose costs one memory pass; and the built-in
 * gradient of a matmul asks for transposed operands. On the tensorflow backend, whose BLAS
 * transposes for free, the built-in op is used; on native (OpenBLAS sgemm) and libtorch (ATen
 * matmul on strided views), which also transpose for free, see {@link matMulTransposing}.
 */
export function matMul(a: tf.Tensor, b: tf.Tensor, transposeA = false, transposeB = false): tf.Tensor {
  if (tf.getBackend() === "tensorflow") return tf.matMul(a, b, transposeA, transposeB);
  if (transposesAreFree()) return matMulTransposing(a, b, transposeA, transposeB);
  const opA = (x: tf.Tensor) => (transposeA ? transposeLast2(x) : x); // a' as used in the forward pass
  const opB = (y: tf.Tensor) => (transposeB ? transposeLast2(y) : y); // b'
  return productWithGradient(
    a,
    b,
    (x, y) => tf.tidy(() => tf.matMul(opA(x), opB(y))),
    // da = dC·b'ᵀ (transposed back when a is used transposed); db = a'ᵀ·dC (likewise).
    (dy, x, y) => (transposeA ? tf.matMul(opB(y), transposeLast2(dy)) : tf.matMul(dy, transposeB ? y : transposeLast2(y))),
    (dy, x) => (transposeB ? tf.matMul(transposeLast2(dy), opA(x)) : tf.matMul(transposeA ? x : transposeLast2(x), dy)),
  );
}

/**
 * matMul whose forward and backward products pass the transposes to the kernel as flags instead
 * of materialising them: for a BLAS that reads either layout at the same speed, every explicit
 * transpose (a full memory pass, ~15% of a training step on the native backend) is waste. Its own
 * gradient, not tfjs's built-in one, because that one does not reduce a broadcast batch back to
 * its input's shape.
 */
function matMulTransposing(a: tf.Tensor, b: tf.Tensor, transposeA: boolean, transposeB: boolean): tf.Tensor {
  // C = op(A)·op(B): dop(A) = dC·op(B)ᵀ and dop(B) = op(A)ᵀ·dC, transposed back where op transposes.
  return productWithGradient(
    a,
    b,
    (x, y) => tf.matMul(x, y, transposeA, transposeB),
    (dy, x, y) => (transposeA ? tf.matMul(y, dy, transposeB, true) : tf.matMul(dy, y, false, !transposeB)),
    (dy, x) => (transposeB ? tf.matMul(dy, x, true, transposeA) : tf.matMul(x, dy, !transposeA, false)),
  );
}

/** A weight that does not train (a variable marked not trainable: the frozen base of a LoRA adapter). */
function isFrozen(t: tf.Tensor): boolean {
  return t instanceof tf.Variable && !t.trainable;
}

/**
 * A product of `a` and `b` with its own gradient. tfjs computes every gradient a custom op returns,
 * wanted or not, and keeps the unwanted ones until the backward pass ends; so an operand that is a
 * frozen weight enters the op as a constant, not an input, and its gradient — a weight-sized
 * product per layer, the whole model's gradients for a LoRA step — is never computed.
 */
function productWithGradient(
  a: tf.Tensor,
  b: tf.Tensor,
  forward: (x: tf.Tensor, y: tf.Tensor) => tf.Tensor,
  gradA: (dy: tf.Tensor, x: tf.Tensor, y: tf.Tensor) => tf.Tensor,
  gradB: (dy: tf.Tensor, x: tf.Tensor, y: tf.Tensor) => tf.Tensor,
): tf.Tensor {
  const [frozenA, frozenB] = [isFrozen(a), isFrozen(b)];
  if (frozenA && frozenB) return forward(a, b);
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const inputs = args.slice(0, -1) as tf.Tensor[];
    const save = args[args.length - 1] as tf.GradSaveFunc;
    const x = frozenA ? a : inputs[0]!;
    const y = frozenB ? b : inputs[inputs.length - 1]!;
    // The frozen weight is read where it lives: a saved copy would be a tensor of its own (a
    // weight's worth of tf.memory() on backends that share the data, a real copy on others).
    save(inputs);
    const gradFunc = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] =>
      tf.tidy(() => {
        const sx = frozenA ? a : saved[0]!;
        const sy = frozenB ? b : saved[saved.length - 1]!;
        const grads: tf.Tensor[] = [];
        if (!frozenA) grads.push(reduceBroadcast(gradA(dy, sx, sy), sx.shape));
        if (!frozenB) grads.push(reduceBroadcast(gradB(dy, sx, sy), sy.shape));
        return grads;
      });
    return { value: forward(x, y), gradFunc };
  });
  return frozenA ? op(b) : frozenB ? op(a) : op(a, b);
}

/** Sums a gradient over the batch axes its input was broadcast along. */
function reduceBroadcast(g: tf.Tensor, shape: number[]): tf.Tensor {
  if (g.rank === shape.length && g.shape.every((d, i) => d === shape[i])) return g;
  const lead = g.rank - shape.length;
  const axes: number[] = [];
  for (let i = 0; i < g.rank - 2; i++) {
    const dim = i - lead >= 0 ? shape[i - lead] : undefined;
    if (dim === undefined || (dim === 1 && g.shape[i] !== 1)) axes.push(i);
  }
  return tf.reshape(axes.length > 0 ? tf.sum(g, axes) : g, shape);
}

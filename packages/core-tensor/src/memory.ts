import { tf } from "./tf.js";

/** Number of tensors currently allocated by the engine (all backends). */
export function liveTensorCount(): number {
  return tf.memory().numTensors;
}

/** Runs `fn` and frees every tensor it created except those it returns (tf.tidy). */
export function scoped<T extends tf.TensorContainer>(fn: () => T): T {
  return tf.tidy(fn);
}

export class TensorLeakError extends Error {
  override name = "TensorLeakError";
}

/**
 * Runs `fn` and throws if it left more live tensors behind than `allowed` (default 0). Use it
 * around a warmed-up step: first calls may legitimately create caches.
 */
export async function assertNoTensorLeak<T>(label: string, fn: () => T | Promise<T>, allowed = 0): Promise<T> {
  const before = liveTensorCount();
  const result = await fn();
  const leaked = liveTensorCount() - before;
  if (leaked > allowed) throw new TensorLeakError(`${label} leaked ${leaked} tensor(s) (allowed ${allowed})`);
  return result;
}

/** Disposes every tensor in a collection (arrays, maps, objects of tensors). */
export function disposeAll(container: tf.TensorContainer | ReadonlyMap<unknown, tf.Tensor>): void {
  if (container instanceof Map) {
    for (const t of container.values()) (t as tf.Tensor).dispose();
    return;
  }
  tf.dispose(container as tf.TensorContainer);
}

/**
 * A variable that takes over `initial`: tf.variable shares the tensor's data but leaves the
 * tensor itself alive, which would count as a leak; this releases it.
 */
export function variableFrom(initial: tf.Tensor, trainable = true, name?: string): tf.Variable {
  const v = tf.variable(initial, trainable, name);
  initial.dispose();
  return v;
}

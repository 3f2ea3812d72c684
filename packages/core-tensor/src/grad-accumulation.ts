import { tf } from "./tf.js";

/**
 * Adds a forward chunk's gradients into the running sums by weight name (gradient accumulation
 * across the chunks of one update), taking ownership of `grads`: each is kept or disposed.
 */
export function addGrads(acc: Map<string, tf.Tensor>, grads: ReadonlyMap<string, tf.Tensor>): void {
  for (const [name, g] of grads) {
    const prev = acc.get(name);
    if (prev === undefined) {
      acc.set(name, g);
    } else {
      acc.set(name, tf.add(prev, g));
      tf.dispose([prev, g]);
    }
  }
}

/**
 * Inside an agent's worker, data-parallel replicas (parallel_training="ddp" with more ranks than
 * agents): the replicas of one agent form a c10d group of their own beside the run's, and before
 * every optimizer step sum their gradients — each the gradient of its share of the batch, weighted
 * by the whole batch's size — so that every replica takes the same step on the same weights.
 */
import { allReduceInBuckets, initProcessGroup, tf, type ProcessGroup } from "@pbrl/core-tensor";
import type { CausalLM } from "@pbrl/models";

/** Where an agent's replicas meet: the run's store, and this replica's place among them. */
export interface ReplicaGroupSpec {
  /** Unique within the run (the agent and the execution that made it). */
  subgroup: string;
  rank: number;
  size: number;
  masterAddr: string;
  masterPort: number;
  timeoutSeconds: number;
}

export function joinReplicas(spec: ReplicaGroupSpec): Promise<ProcessGroup> {
  return initProcessGroup({
    rank: spec.rank,
    worldSize: spec.size,
    masterAddr: spec.masterAddr,
    masterPort: spec.masterPort,
    timeoutSeconds: spec.timeoutSeconds,
    subgroup: spec.subgroup,
  });
}

/**
 * `grads` (by weight name) and `scalars` summed over the replicas, a bucket at a time. Every
 * replica reduces every weight the model trains, in one order: a replica whose share had no
 * gradient for a weight (no pairs, or no generated token) adds zeros. Disposes `grads`.
 */
export async function sumOverReplicas(
  group: ProcessGroup,
  model: CausalLM,
  grads: Map<string, tf.Tensor>,
  scalars: readonly number[],
): Promise<{ grads: Map<string, tf.Tensor>; scalars: number[] }> {
  const variables = model.trainableVariables();
  const shapes = model.gradsByWeightName(Object.fromEntries(variables.map((v) => [v.name, v])));
  const names = [...shapes.keys()].sort();
  const zeros: tf.Tensor[] = [];
  const inputs = names.map((n) => {
    const g = grads.get(n);
    if (g !== undefined) return g;
    const z = tf.zeros(shapes.get(n)!.shape);
    zeros.push(z);
    return z;
  });
  const head = tf.tensor1d(Float32Array.from(scalars));
  try {
    const [sum, ...summed] = await allReduceInBuckets(group, [head, ...inputs], "sum");
    const values = Array.from(await sum!.data());
    sum!.dispose();
    return { grads: new Map(names.map((n, i) => [n, summed[i]!])), scalars: values };
  } finally {
    tf.dispose([head, ...zeros, ...grads.values()]);
  }
}

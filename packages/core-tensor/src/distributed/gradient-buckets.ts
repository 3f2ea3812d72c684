/**
 * Gradients reduced over a group a bucket at a time, as PyTorch's DistributedDataParallel does
 * (bucket_cap_mb, 25 MB by default): each bucket is packed into one flat buffer for one Gloo call,
 * so the copy on the wire never holds more than a bucket beside the gradients.
 */
import type { tf } from "../tf.js";
import type { ReduceOp } from "./addon-functions.js";
import type { ProcessGroup } from "./process-group.js";

/** DistributedDataParallel's default bucket size, bytes. */
export const DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024;

/**
 * The indices of tensors of the given byte sizes in consecutive buckets of at most `capBytes`
 * each; a tensor larger than the cap is a bucket of its own. Pure.
 */
export function bucketRuns(bytes: readonly number[], capBytes: number): number[][] {
  if (!(capBytes > 0)) throw new RangeError(`bucketRuns: the cap must be above 0 bytes, got ${capBytes}`);
  const runs: number[][] = [];
  let run: number[] = [];
  let filled = 0;
  bytes.forEach((b, i) => {
    if (run.length > 0 && filled + b > capBytes) {
      runs.push(run);
      run = [];
      filled = 0;
    }
    run.push(i);
    filled += b;
  });
  if (run.length > 0) runs.push(run);
  return runs;
}

/**
 * Each tensor reduced over the group (every rank passes tensors of the same shapes in the same
 * order), a bucket of at most `capBytes` per collective; all buckets are issued at once and c10d
 * runs them in order. Returns new tensors, in order; the inputs are not changed.
 */
export async function allReduceInBuckets(
  group: ProcessGroup,
  tensors: readonly tf.Tensor[],
  op: ReduceOp = "sum",
  capBytes = DEFAULT_BUCKET_BYTES,
): Promise<tf.Tensor[]> {
  const runs = bucketRuns(
    tensors.map((t) => t.size * 4),
    capBytes,
  );
  const reduced = await Promise.all(
    runs.map((run) =>
      group.allReduce(
        run.map((i) => tensors[i]!),
        op,
      ),
    ),
  );
  return reduced.flat();
}

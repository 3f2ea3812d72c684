/**
 * Refuses weights holding NaN or ±Infinity when a model is built: such a model generates garbage
 * and trains on nothing, and before this check a run finished "successfully" and saved NaN
 * agents. Half-precision checkpoints are covered too: their NaN and Infinity bit patterns decode
 * to float32 NaN and Infinity before the check, as do float64 values beyond float32's range.
 */
import type { HostTensor } from "@pbrl/core-tensor";
import { WeightLoadError } from "./weight-load-error.js";

/** How many entries of `data` are NaN or ±Infinity, and the first one's index (−1 when none). */
export function countNonFinite(data: ArrayLike<number>): { count: number; first: number } {
  // x·0 is 0 for every finite x and NaN otherwise, so one multiply-add per value proves a tensor
  // clean (the common case, ~0.7 ns a value); only a dirty tensor pays for the exact count.
  let probe = 0;
  for (let i = 0; i < data.length; i++) probe += data[i]! * 0;
  if (probe === 0) return { count: 0, first: -1 };
  let count = 0;
  let first = -1;
  for (let i = 0; i < data.length; i++) {
    if (Number.isFinite(data[i]!)) continue;
    if (first < 0) first = i;
    count++;
  }
  return { count, first };
}

/** Throws {@link WeightLoadError} naming `name`, how many values are non-finite, and what to do. */
export function checkFiniteWeight(name: string, tensor: HostTensor, source: string): void {
  const { count, first } = countNonFinite(tensor.data);
  if (count === 0) return;
  throw new WeightLoadError(
    `${source}: weight "${name}" holds ${count} non-finite value${count === 1 ? "" : "s"} (NaN or ±Infinity) of ${tensor.data.length}, ` +
      `the first at index ${first} (${tensor.data[first]}); a model with such weights generates garbage. ` +
      `The checkpoint is corrupt or was saved from a run that diverged: re-download or re-export it, or load an earlier checkpoint.`,
  );
}

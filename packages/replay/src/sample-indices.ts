import type { RngStream } from "@pbrl/core-tensor";
import { ReplayError } from "./errors.js";

/**
 * `count` indices into a dataset of `size`: no index repeats while count ≤ size; beyond that,
 * whole fresh permutations are used while at least `size` remain, and the rest comes from one
 * more permutation, so every index appears ⌊count/size⌋ or ⌈count/size⌉ times.
 */
export function sampleIndices(size: number, count: number, rng: RngStream): number[] {
  if (!Number.isSafeInteger(size) || size < 0) throw new ReplayError(`dataset size must be a non-negative integer, got ${size}`);
  if (!Number.isSafeInteger(count) || count < 0) throw new ReplayError(`sample count must be a non-negative integer, got ${count}`);
  if (count > 0 && size === 0) throw new ReplayError(`cannot draw ${count} samples from an empty dataset`);
  const out: number[] = [];
  let remaining = count;
  // Stryker disable next-line EqualityOperator: at remaining = size the branch below draws the same one whole permutation
  while (remaining >= size && remaining > 0) {
    for (const i of rng.permutation(size)) out.push(i);
    remaining -= size;
  }
  if (remaining > 0) {
    const perm = rng.permutation(size);
    for (let j = 0; j < remaining; j++) out.push(perm[j]!);
  }
  return out;
}

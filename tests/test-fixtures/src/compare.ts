/**
 * Comparing numbers against a reference written by PyTorch (scripts/reference/): the largest absolute difference, and an
 * assertion over named tensors (gradients by weight name against a safetensors file of the expected ones).
 */
import { expect } from "vitest";

/** A tensor as far as the comparison reads it: tfjs' `Tensor` is one. */
export interface HasData {
  dataSync(): ArrayLike<number>;
}

/** A reference tensor as core-tensor's `readSafetensors(file).tensors` holds it. */
export interface ReferenceTensor {
  tensor: { data: ArrayLike<number> };
}

/** The largest |got[i] − want[i]| over `want`'s length: NaN where `got` is shorter or either holds NaN, so a `≤ tolerance` check fails. */
export function maxAbsDifference(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
  return worst;
}

/**
 * Asserts that `got` has a tensor of each name in `reference` (and no other name, unless `subset`: the reference covers
 * only some of them), each as long as the reference's, and that the largest absolute difference over them all is at
 * most `tolerance`; returns that difference. `label` names the comparison in a failure.
 */
export function expectCloseToReference(
  got: ReadonlyMap<string, HasData>,
  reference: ReadonlyMap<string, ReferenceTensor>,
  tolerance: number,
  options: { label?: string; subset?: boolean } = {},
): number {
  const label = options.label ?? "largest absolute difference";
  const names = [...reference.keys()].sort();
  const missing = names.filter((n) => !got.has(n));
  if (options.subset === true) expect(missing, `${label}: names missing`).toEqual([]);
  else expect([...got.keys()].sort(), `${label}: names`).toEqual(names);
  let worst = 0;
  for (const [name, want] of reference) {
    const data = got.get(name)!.dataSync();
    expect(data.length, `${label}: length of ${name}`).toBe(want.tensor.data.length);
    worst = Math.max(worst, maxAbsDifference(data, want.tensor.data));
  }
  expect(worst, label).toBeLessThanOrEqual(tolerance);
  return worst;
}

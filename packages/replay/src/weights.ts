import { ReplayError } from "./errors.js";

function checkCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 0) throw new ReplayError(`dataset count must be a non-negative integer, got ${count}`);
}

/** Equal weights over `count` datasets (summing to 1). */
export function uniformWeights(count: number): number[] {
  checkCount(count);
  return Array.from({ length: count }, () => 1 / count);
}

/**
 * λ-decay weights of `count` datasets ordered oldest → newest: the newest has age 0 and
 * w(a) ∝ λ^a, normalised to sum 1. λ = 0 keeps only the newest (0^0 = 1), λ = 1 weighs all equally.
 */
export function lambdaWeights(count: number, lambda: number): number[] {
  checkCount(count);
  // Written as a negated range check so that NaN fails it too.
  if (!(lambda >= 0 && lambda <= 1)) throw new ReplayError(`lambda must be a number in [0, 1], got ${lambda}`);
  const raw = Array.from({ length: count }, (_, i) => lambda ** (count - 1 - i));
  const sum = raw.reduce((a, b) => a + b, 0);
  return raw.map((w) => w / sum);
}

/** The arithmetic mean, 0 for no values (what a metric of an empty batch reports). */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** The arithmetic mean, or null for no values (a summary that has nothing to average says so). */
export function meanOrNull(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : mean(xs);
}

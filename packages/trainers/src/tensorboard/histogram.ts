// Bucketing a list of numbers (e.g. one round's rewards) into a TensorBoard HistogramProto.
import type { HistogramData } from "./event.js";

/** A bin count over the data's own [min, max], or a fixed range (so steps share bucket edges). */
export type HistogramBins = number | { min: number; max: number; bins: number };

export const DEFAULT_HISTOGRAM_BINS = 30;

/**
 * Equal-width buckets. bucketLimit[i] is bucket i's right edge (exclusive), the last one being the
 * range's max, whose bucket also holds the max itself. With a fixed range, values below it land in
 * bucket 0 (which the proto defines as reaching down to -DBL_MAX) and values above it in the last
 * bucket, so `num` always equals the bucket total; min/max/sum/sumSquares describe the data.
 * NaN and ±Infinity cannot be placed in a bucket and are left out (of num and sum too);
 * undefined when no finite value is left. One bucket when all values are equal.
 */
export function histogramOf(values: readonly number[], bins: HistogramBins = DEFAULT_HISTOGRAM_BINS): HistogramData | undefined {
  const k = typeof bins === "number" ? bins : bins.bins;
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`histogram bins must be a positive integer, got ${k}`);
  if (typeof bins !== "number" && !(Number.isFinite(bins.min) && Number.isFinite(bins.max) && bins.max > bins.min)) {
    throw new RangeError(`histogram range must be finite with max > min, got [${bins.min}, ${bins.max}]`);
  }
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return undefined;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let sumSquares = 0;
  for (const v of finite) {
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    sumSquares += v * v;
  }
  const stats = { min, max, num: finite.length, sum, sumSquares };
  const lo = typeof bins === "number" ? min : bins.min;
  const hi = typeof bins === "number" ? max : bins.max;
  if (hi === lo) return { ...stats, bucketLimit: [hi], bucket: [finite.length] };
  // The same edges as reward-distribution.ts's binEdges (lo + (hi - lo) * i / k), so with the
  // declared reward range the counts match reward_distributions/*.json. (hi - lo) can overflow
  // near ±Number.MAX_VALUE; the split form cannot.
  const edge = Number.isFinite(hi - lo) ? (i: number) => lo + ((hi - lo) * i) / k : (i: number) => lo + (hi / k - lo / k) * i;
  const bucketLimit = Array.from({ length: k }, (_, i) => (i === k - 1 ? hi : edge(i + 1)));
  const bucket = new Array<number>(k).fill(0);
  for (const v of finite) bucket[bucketIndex(bucketLimit, v)]! += 1;
  return { ...stats, bucketLimit, bucket };
}

/** The first bucket whose limit is above v (binary search), else the last bucket. */
function bucketIndex(limits: readonly number[], v: number): number {
  let lo = 0;
  let hi = limits.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (v < limits[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

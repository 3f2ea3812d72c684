/**
 * This machine's ceilings as the active backend reaches them, measured in the bench's own run:
 * the float32 GEMM rate of a 2048² product and the rate at which a reduction reads a buffer far
 * larger than the caches. Generation is judged against them (roofline.ts).
 */
import { tf } from "@pbrl/core-tensor";
import type { MachinePeak } from "./roofline.js";

const GEMM_N = 2048;
/** 256 MiB of float32: well past any last-level cache, so the sum reads memory. */
const READ_FLOATS = 64 * 1024 * 1024;

/** The best of `tries` timed runs of `f` (after one untimed), in seconds: noise only ever slows a run. */
function bestSeconds(f: () => void, tries: number): number {
  f();
  let best = Infinity;
  for (let i = 0; i < tries; i++) {
    const t = performance.now();
    f();
    best = Math.min(best, (performance.now() - t) / 1000);
  }
  return best;
}

export function measureMachinePeak(): MachinePeak {
  const a = tf.randomUniform([GEMM_N, GEMM_N], -1, 1, "float32", 1);
  const b = tf.randomUniform([GEMM_N, GEMM_N], -1, 1, "float32", 2);
  const big = tf.fill([READ_FLOATS], 1, "float32");
  try {
    // dataSync: the product or sum is done, not only queued, when the clock stops.
    const gemm = bestSeconds(() => tf.tidy(() => tf.matMul(a, b).slice([0, 0], [1, 1]).dataSync()), 3);
    const read = bestSeconds(() => tf.tidy(() => tf.sum(big).dataSync()), 3);
    return { flopsPerS: (2 * GEMM_N ** 3) / gemm, readBytesPerS: (4 * READ_FLOATS) / read };
  } finally {
    tf.dispose([a, b, big]);
  }
}

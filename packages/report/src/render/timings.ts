/**
 * Timings from the `time` (ISO) and `elapsed_s` fields the trainers stamp on every metrics
 * record. `elapsed_s` restarts from 0 when a run is resumed, so the records split into segments
 * where it goes down; compute time is the sum of the segments' last values.
 */
import { num } from "../read/metrics-file.js";
import type { MetricsRecord } from "../run-data.js";
import { recordRounds } from "./metric-series.js";

export interface Timings {
  firstTime: string | null;
  lastTime: string | null;
  /** Seconds of computing, over all segments; null without elapsed_s. */
  computeSeconds: number | null;
  /** Times the run was resumed (segments − 1). */
  restarts: number;
  /** Seconds per round: from the previous round's last record (or the segment's start) to this round's last record. */
  perRound: Map<number, number>;
}

export function timings(records: readonly MetricsRecord[]): Timings {
  const times = records.map((r) => r["time"]).filter((t): t is string => typeof t === "string");
  const rounds = recordRounds(records);
  let compute: number | null = null;
  let restarts = 0;
  let segmentMax = 0;
  let prev = -Infinity;
  // The last elapsed_s of each round, with the segment it was in.
  const lastOfRound = new Map<number, { elapsed: number; segment: number }>();
  for (const [i, r] of records.entries()) {
    const e = num(r, "elapsed_s");
    if (!Number.isFinite(e)) continue;
    if (e < prev) {
      restarts += 1;
      compute = (compute ?? 0) + segmentMax;
      segmentMax = 0;
    }
    prev = e;
    segmentMax = Math.max(segmentMax, e);
    compute ??= 0;
    const round = rounds[i];
    if (round !== null && round !== undefined) lastOfRound.set(round, { elapsed: e, segment: restarts });
  }
  if (compute !== null) compute += segmentMax;
  const perRound = new Map<number, number>();
  const ordered = [...lastOfRound.entries()].sort((a, b) => a[0] - b[0]);
  ordered.forEach(([round, v], k) => {
    const before = ordered[k - 1];
    perRound.set(round, before !== undefined && before[1].segment === v.segment ? v.elapsed - before[1].elapsed : v.elapsed);
  });
  return { firstTime: times[0] ?? null, lastTime: times[times.length - 1] ?? null, computeSeconds: compute, restarts, perRound };
}

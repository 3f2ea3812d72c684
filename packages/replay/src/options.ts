import type { RngStream } from "@pbrl/core-tensor";
import { ReplayError } from "./errors.js";

export const REPLAY_MODES = ["current", "nearest_k", "all_history", "lambda_decay"] as const;
export type ReplayMode = (typeof REPLAY_MODES)[number];

export interface OnDiskReplayBufferOptions {
  mode: ReplayMode;
  /** nearest_k: how many of the newest non-empty rounds are eligible. `current` accepts only 1. */
  k?: number | null;
  /** lambda_decay: the per-round decay λ in [0, 1]. */
  lambda?: number | null;
  /** Draws per round in the historical modes; unset uses the default sample size rule. */
  sampleSize?: number | null;
  /** preference_replay_dir: where the round files are written. */
  dir: string;
  /** The replay stream: every draw, pick and shuffle comes from it. */
  rng: RngStream;
}

const isSet = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * The config layer validates the user's fields; this guards code that builds a buffer directly,
 * with the same rules, so an incoherent buffer fails at construction rather than mid-run.
 */
export function checkBufferOptions(o: OnDiskReplayBufferOptions): void {
  const where = `replay buffer (mode ${JSON.stringify(o.mode)})`;
  if (!(REPLAY_MODES as readonly string[]).includes(o.mode))
    throw new ReplayError(`unknown replay mode ${JSON.stringify(o.mode)}; expected one of ${REPLAY_MODES.join(", ")}`);
  if (typeof o.dir !== "string" || o.dir.length === 0) throw new ReplayError(`${where}: dir must be a non-empty path`);
  // Duck-typed: a second copy of core-tensor (source and build both loaded) would defeat instanceof.
  const rng = o.rng as Partial<RngStream> | undefined;
  if (typeof rng?.weightedIndex !== "function" || typeof rng.permutation !== "function" || typeof rng.shuffle !== "function")
    throw new ReplayError(`${where}: rng must be an RngStream`);
  if (o.mode === "current") {
    if (isSet(o.k) && o.k !== 1) throw new ReplayError(`${where}: k must be unset or 1, got ${o.k}`);
    if (isSet(o.sampleSize)) throw new ReplayError(`${where}: sampleSize is only valid with nearest_k, all_history or lambda_decay`);
  } else {
    const s = o.sampleSize;
    if (isSet(s) && !(Number.isSafeInteger(s) && (s as number) >= 1)) throw new ReplayError(`${where}: sampleSize must be an integer ≥ 1 or unset, got ${s}`);
  }
  if (o.mode === "nearest_k") {
    if (!(Number.isSafeInteger(o.k) && (o.k as number) >= 1)) throw new ReplayError(`${where}: k must be an integer ≥ 1, got ${o.k}`);
  } else if (o.mode !== "current" && isSet(o.k)) {
    throw new ReplayError(`${where}: k is only valid with nearest_k`);
  }
  if (o.mode === "lambda_decay") {
    if (typeof o.lambda !== "number" || !(o.lambda >= 0 && o.lambda <= 1))
      throw new ReplayError(`${where}: lambda must be a number in [0, 1], got ${o.lambda}`);
  } else if (isSet(o.lambda)) {
    throw new ReplayError(`${where}: lambda is only valid with lambda_decay`);
  }
}

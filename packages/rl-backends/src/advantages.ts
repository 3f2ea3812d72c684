/**
 * Advantages of the REINFORCE family (MAGRPO, MAREINFORCE, MAReMax, MARLOO).
 *
 * A group is the G returns of one agent on one item: the joint returns of the item's G joint
 * responses, already shaped by any per-sample penalty (e.g. a reference KL). The four algorithms
 * differ only in the baseline subtracted from each return:
 *
 *   mean (MAGRPO)       A_k = R_k − mean(R)
 *   raw  (MAREINFORCE)  A_k = R_k
 *   max  (MAReMax)      A_k = R_k − max(R)
 *   rloo (MARLOO)       A_k = R_k − mean_{j≠k} R_j  = G/(G−1) · (R_k − mean(R))
 *
 * Normalisation (`advantage_normalization`) — deliberately NOT CoMLRL's. CoMLRL z-scores the
 * advantages within the group, (A − mean(A)) / std(A), which removes any per-group shift and any
 * positive scale and so makes the four modes give exactly the same advantages. Here the
 * advantages are only divided by the group's spread, the population std of its returns R,
 * without re-centring:
 *
 *   A_k ← A_k / std_pop(R)
 *
 * so each baseline keeps its meaning after normalisation: raw stays all-positive when the
 * returns are, max stays ≤ 0, mean and rloo stay centred, and rloo stays G/(G−1) times mean.
 * Two edge cases, both documented choices:
 * - G = 1: there is no spread to measure; the advantages are left unscaled.
 * - A group without spread (std_pop(R) < 1e-6, i.e. every return the same up to rounding) is
 *   left unscaled too, rather than divided by the 1e-6 floor. For mean/rloo/max its advantages
 *   are (numerically) zero either way, but dividing by the floor would blow float noise up to
 *   O(1) values and would multiply raw returns by a million.
 * For groups with spread this is exactly "divide by max(std_pop(R), 1e-6)".
 */

import { mean } from "@pbrl/core-tensor";

/** CoMLRL's advantage_mode values. */
export const ADVANTAGE_MODES = ["mean", "raw", "max", "rloo"] as const;
export type AdvantageMode = (typeof ADVANTAGE_MODES)[number];

/** Groups whose returns have a population std below this are not rescaled (see above). */
export const ADVANTAGE_STD_FLOOR = 1e-6;

/** The REINFORCE-family values of MARLHF's `rl_algorithm`, and the baseline each one uses. */
export const REINFORCE_ALGORITHMS = {
  magrpo: "mean",
  mareinforce: "raw",
  maremax: "max",
  marloo: "rloo",
} as const satisfies Record<string, AdvantageMode>;
export type ReinforceAlgorithm = keyof typeof REINFORCE_ALGORITHMS;

/** Actor-critic values of `rl_algorithm`: a critic replaces the group baseline. */
export const ACTOR_CRITIC_ALGORITHMS = ["maac", "iac"] as const;
export type ActorCriticAlgorithm = (typeof ACTOR_CRITIC_ALGORITHMS)[number];

/** Accepted alternative spellings, as CoMLRL: `mareforce` means `mareinforce`. */
export const RL_ALGORITHM_ALIASES = { mareforce: "mareinforce" } as const satisfies Readonly<Record<string, ReinforceAlgorithm>>;

export type RlAlgorithm = ReinforceAlgorithm | ActorCriticAlgorithm;

/** Every canonical `rl_algorithm` (magrpo is MARLHF's default): the REINFORCE family, then actor-critic. A tuple, so configs can enumerate it. */
export const RL_ALGORITHMS = ["magrpo", "mareinforce", "maremax", "marloo", ...ACTOR_CRITIC_ALGORITHMS] as const satisfies readonly RlAlgorithm[];

export class RlAlgorithmError extends Error {
  override name = "RlAlgorithmError";
}

/** The canonical name of an `rl_algorithm` value (aliases resolved, case-insensitive). */
export function canonicalRlAlgorithm(name: string): RlAlgorithm {
  const key = name.trim().toLowerCase();
  const resolved = (RL_ALGORITHM_ALIASES as Readonly<Record<string, ReinforceAlgorithm>>)[key] ?? key;
  if ((RL_ALGORITHMS as readonly string[]).includes(resolved)) return resolved as RlAlgorithm;
  throw new RlAlgorithmError(`rl_algorithm: unknown value ${JSON.stringify(name)}; accepted: ${RL_ALGORITHMS.join(", ")} (alias: mareforce = mareinforce)`);
}

export function isReinforceAlgorithm(name: RlAlgorithm): name is ReinforceAlgorithm {
  return Object.hasOwn(REINFORCE_ALGORITHMS, name);
}

/** The advantage mode of a REINFORCE-family `rl_algorithm` (magrpo → mean, mareinforce → raw, maremax → max, marloo → rloo). */
export function advantageModeFor(rlAlgorithm: string): AdvantageMode {
  const name = canonicalRlAlgorithm(rlAlgorithm);
  if (!isReinforceAlgorithm(name)) {
    throw new RlAlgorithmError(
      `rl_algorithm=${JSON.stringify(name)} is an actor-critic algorithm and has no group baseline; the REINFORCE family is ${Object.keys(REINFORCE_ALGORITHMS).join(", ")}`,
    );
  }
  return REINFORCE_ALGORITHMS[name];
}

function checkReturns(returns: readonly number[]): void {
  if (returns.length === 0) throw new RangeError("advantages of an empty group: a group needs at least one return");
  const bad = returns.findIndex((r) => !Number.isFinite(r));
  if (bad >= 0) throw new RangeError(`return ${bad} of the group is ${String(returns[bad])}; returns must be finite`);
}

/** Population standard deviation (divide by n). */
export function stdPop(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) * (x - m), 0) / xs.length);
}

/**
 * The baseline-subtracted advantages of one group, before normalisation. With G = 1, `rloo`
 * (no other sample to form a baseline from) falls back to `raw`: the leave-one-out baseline over
 * zero samples is taken as 0, which keeps the estimator unbiased and still learning, where
 * CoMLRL's fallback to `mean` would make every advantage 0 (no update at all).
 */
export function baselineAdvantages(returns: readonly number[], mode: AdvantageMode): number[] {
  checkReturns(returns);
  const g = returns.length;
  switch (mode) {
    case "mean": {
      const m = mean(returns);
      return returns.map((r) => r - m);
    }
    case "raw":
      return [...returns];
    case "max": {
      const mx = Math.max(...returns);
      return returns.map((r) => r - mx);
    }
    case "rloo": {
      if (g === 1) return [...returns];
      const total = returns.reduce((a, b) => a + b, 0);
      return returns.map((r) => r - (total - r) / (g - 1));
    }
    default:
      throw new RangeError(`advantage mode ${JSON.stringify(mode)} is not one of ${ADVANTAGE_MODES.join(", ")}`);
  }
}

/** The divisor `normalize` applies to a group: std_pop(R), or 1 when G = 1 or the group has no spread. */
export function normalizationScale(returns: readonly number[]): number {
  checkReturns(returns);
  // G = 1 needs no case of its own: one return has std_pop 0, below the floor, so the scale is 1.
  const s = stdPop(returns);
  return s < ADVANTAGE_STD_FLOOR ? 1 : s;
}

/**
 * Advantages of one group (one agent, one item): the mode's baseline subtracted, then, with
 * `normalize`, divided by the group's return spread without re-centring (see the module notes).
 */
export function groupAdvantages(returns: readonly number[], mode: AdvantageMode, normalize: boolean): number[] {
  const a = baselineAdvantages(returns, mode);
  if (!normalize) return a;
  const scale = normalizationScale(returns);
  return a.map((x) => x / scale);
}

/**
 * Returns shaped by per-sample penalties (R'_k = R_k − p_k), the hook the frozen-reference KL uses
 * (p_k = coef · KL_k). Penalties must be finite, one per return.
 */
export function shapeReturns(returns: readonly number[], penalties: readonly number[] | undefined): number[] {
  if (penalties === undefined) return [...returns];
  if (penalties.length !== returns.length) throw new RangeError(`${penalties.length} penalties for ${returns.length} returns; pass one per generation`);
  const bad = penalties.findIndex((p) => !Number.isFinite(p));
  if (bad >= 0) throw new RangeError(`penalty ${bad} is ${String(penalties[bad])}; penalties must be finite`);
  return returns.map((r, k) => r - penalties[k]!);
}

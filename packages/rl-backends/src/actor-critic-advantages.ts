import { mean, NonFiniteError } from "@pbrl/core-tensor";
import { ADVANTAGE_STD_FLOOR, shapeReturns, stdPop } from "./advantages.js";
import type { Rollout } from "./rollouts.js";
import type { Penalties } from "./update.js";

/** `shaped[rollout][g]` of one agent: R − p (its own penalties). */
export function shapedReturns(rollouts: readonly Rollout[], agent: number, penalties?: Penalties): number[][] {
  return rollouts.map((r, k) => {
    const p = penalties?.[agent]?.[k];
    if (penalties !== undefined && p === undefined) throw new RangeError(`no penalties for agent ${agent} on rollout ${k} (item ${r.itemIndex})`);
    try {
      return shapeReturns(r.returns, p);
    } catch (err) {
      throw new RangeError(`agent ${agent}, item ${r.itemIndex}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/**
 * One agent's advantages A = R' − V over a batch, `[rollout][g]`; with `normalize`, the
 * batch-level z-score (A − mean) / std_pop (unscaled, only centred, when std_pop < 1e-6; left as
 * is with fewer than two samples).
 */
export function actorCriticAdvantages(shaped: readonly (readonly number[])[], values: readonly (readonly number[])[], normalize: boolean): number[][] {
  if (shaped.length !== values.length) throw new RangeError(`advantages: ${shaped.length} rollout(s) of returns but ${values.length} of values`);
  const adv = shaped.map((row, r) => {
    const v = values[r]!;
    if (v.length !== row.length) throw new RangeError(`advantages: rollout ${r} has ${row.length} return(s) but ${v.length} value(s)`);
    return row.map((x, g) => {
      const a = x - v[g]!;
      if (!Number.isFinite(a)) throw new NonFiniteError(`advantage of rollout ${r}, generation ${g} is ${a} (return ${x}, value ${v[g]})`);
      return a;
    });
  });
  const flat = adv.flat();
  if (!normalize || flat.length < 2) return adv;
  const m = mean(flat);
  const s = stdPop(flat);
  const scale = s < ADVANTAGE_STD_FLOOR ? 1 : s;
  return adv.map((row) => row.map((a) => (a - m) / scale));
}

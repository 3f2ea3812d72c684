import { errorText } from "@pbrl/core-tensor";
import { RewardError } from "@pbrl/preference-data";
import type { ProcessOutcome } from "./protocol.js";

/**
 * reward_processor values computed in the worker, for the trainer's synchronous processor: the
 * trainer calls it on the numbers reward_func just returned, so each is looked up here (a queue
 * per value, since two items may share one).
 */
export class ProcessedValues {
  private readonly byValue = new Map<number, ProcessOutcome[]>();

  add(values: ArrayLike<unknown>, outcomes: readonly (ProcessOutcome | null)[]): void {
    outcomes.forEach((o, j) => {
      const v = values[j];
      if (o === null || typeof v !== "number") return;
      const queue = this.byValue.get(v);
      if (queue === undefined) this.byValue.set(v, [o]);
      else queue.push(o);
    });
  }

  take(v: number): number {
    const queue = this.byValue.get(v);
    const o = queue?.shift();
    if (queue !== undefined && queue.length === 0) this.byValue.delete(v);
    if (o === undefined) throw new RewardError(`reward_processor: no value was computed for ${v} in the reward worker thread (a pbrl bug: please report it)`);
    // The trainer adds "reward_processor threw on <v> (candidate, item)" around this message.
    if ("threw" in o) throw new RewardError(typeof o.threw === "string" ? o.threw : errorText(o.threw));
    // A non-number crosses as it is, for the trainer's check to report.
    return o.value as number;
  }
}

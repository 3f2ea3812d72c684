import type { RewardContext, RewardFunc, RewardProcessor } from "./types.js";

export class RewardError extends Error {
  override name = "RewardError";
}

/** "item 5 (id "abc")": how errors name an item. */
export function describeItem(context: Pick<RewardContext, "item" | "itemIndex">): string {
  const id = context.item["id"];
  return `item ${context.itemIndex}${typeof id === "string" || typeof id === "number" ? ` (id ${JSON.stringify(id)})` : ""}`;
}

export interface ScoredCandidates {
  /** What reward_func returned, one per joint candidate. */
  raw: number[];
  /** After reward_processor; these decide winners. */
  processed: number[];
}

/**
 * Calls the oracle once for all joint candidates of an item and checks what comes back: one
 * finite number per candidate, before and after reward_processor. Anything else is an error
 * naming the item, never a silently replaced value.
 */
export async function scoreJointCandidates(
  rewardFunc: RewardFunc,
  completions: string[][],
  context: RewardContext,
  processor?: RewardProcessor,
): Promise<ScoredCandidates> {
  const expected = Math.min(...completions.map((c) => c.length));
  const where = describeItem(context);
  let returned: unknown;
  try {
    returned = await rewardFunc(completions, context);
  } catch (err) {
    throw new RewardError(`reward_func threw on ${where}: ${(err as Error).message ?? String(err)}`, { cause: err });
  }
  const values = ArrayBuffer.isView(returned) ? Array.from(returned as unknown as ArrayLike<number>) : returned;
  if (!Array.isArray(values)) {
    throw new RewardError(`reward_func returned ${typeof returned} on ${where}; it must return an array with one number per joint candidate (${expected})`);
  }
  if (values.length !== expected) {
    throw new RewardError(`reward_func returned ${values.length} value(s) on ${where}; expected ${expected}, one per joint candidate`);
  }
  const raw = values.map((v, j) => {
    if (typeof v !== "number" || !Number.isFinite(v)) throw new RewardError(`reward_func returned ${String(v)} for candidate ${j} of ${where}; rewards must be finite numbers`);
    return v;
  });
  const processed = processor === undefined ? raw : raw.map((v, j) => {
    const p = processor(v);
    if (typeof p !== "number" || !Number.isFinite(p)) throw new RewardError(`reward_processor turned ${v} into ${String(p)} for candidate ${j} of ${where}; it must return finite numbers`);
    return p;
  });
  return { raw, processed };
}

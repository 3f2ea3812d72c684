import { checkTimeoutS, settleWithin } from "./deadline.js";
import { describeItem, describeValue, errorMessage, kindOf } from "./describe.js";
import type { RewardContext, RewardFunc, RewardProcessor } from "./types.js";

export { describeItem } from "./describe.js";

export class RewardError extends Error {
  override name = "RewardError";
}

/** reward_func did not settle within reward_timeout_s. */
export class RewardTimeoutError extends RewardError {
  override name = "RewardTimeoutError";
  constructor(
    message: string,
    /** The limit that was exceeded, in seconds. */
    readonly timeoutS: number,
    /** The dataset position of the item being scored. */
    readonly itemIndex: number,
  ) {
    super(message);
  }
}

/** reward_timeout_s when a caller does not say: generous for an LLM judge, finite so a hung one is reported. */
export const DEFAULT_REWARD_TIMEOUT_S = 300;

export interface RewardCallOptions {
  /**
   * reward_timeout_s: seconds an asynchronous reward_func call may take before it is a
   * RewardTimeoutError; null: no limit; default DEFAULT_REWARD_TIMEOUT_S. A synchronous reward
   * blocks the thread and cannot be interrupted.
   */
  timeoutS?: number | null | undefined;
  /** Aborted once the batch this call belongs to has failed: its timer is released and its result no longer awaited. */
  signal?: AbortSignal | undefined;
  /** Which candidates these are, for messages (e.g. "comparator side"). */
  label?: string | undefined;
}

export interface ScoredCandidates {
  /** What reward_func returned, one per joint candidate. */
  raw: number[];
  /** After reward_processor; these decide winners. */
  processed: number[];
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function isAbortOf(err: unknown, signal: AbortSignal | undefined): boolean {
  return signal !== undefined && signal.aborted && err === signal.reason;
}

async function callReward(
  rewardFunc: RewardFunc,
  completions: string[][],
  context: RewardContext,
  where: string,
  expected: number,
  options: RewardCallOptions,
): Promise<unknown> {
  const { signal } = options;
  if (signal?.aborted === true) throw signal.reason;
  const timeoutS = checkTimeoutS(options.timeoutS === undefined ? DEFAULT_REWARD_TIMEOUT_S : options.timeoutS, "reward_timeout_s");
  try {
    const returned = rewardFunc(completions, context);
    if (!isThenable(returned)) return returned;
    const timedOut = () =>
      new RewardTimeoutError(
        `reward_func did not return within reward_timeout_s=${timeoutS} s on ${where} (scoring ${expected} joint candidate(s)); make the reward return (or throw) in time, or raise reward_timeout_s (null: no limit)`,
        timeoutS ?? Infinity,
        context.itemIndex,
      );
    return await settleWithin(returned, timeoutS, timedOut, signal);
  } catch (err) {
    // A timeout, or the batch's abort, passes through as is; anything else is the reward's own failure.
    if (err instanceof RewardTimeoutError || isAbortOf(err, signal)) throw err;
    throw new RewardError(`reward_func threw on ${where}: ${errorMessage(err)}`, { cause: err });
  }
}

/** One finite number per candidate, else an error showing exactly what came back (strings in quotes). */
function rewardValues(returned: unknown, expected: number, where: string): number[] {
  const values: unknown = ArrayBuffer.isView(returned) ? Array.from(returned as unknown as ArrayLike<unknown>) : returned;
  if (!Array.isArray(values)) {
    throw new RewardError(
      `reward_func returned ${describeValue(returned)} on ${where}; it must return an array with one number per joint candidate (${expected}), e.g. [0.5, 1]`,
    );
  }
  if (values.length !== expected) {
    throw new RewardError(
      `reward_func returned ${values.length} value(s) on ${where}; expected ${expected}, one per joint candidate (got ${describeValue(values)})`,
    );
  }
  const raw: number[] = [];
  // An index loop, not map: map skips the holes of a sparse array.
  for (let j = 0; j < values.length; j++) {
    const v: unknown = values[j];
    if (typeof v !== "number") {
      const hint = typeof v === "string" ? " (convert with Number(...))" : "";
      throw new RewardError(
        `reward_func returned ${describeValue(v)} for candidate ${j} of ${where} (index ${j} of the array); return numbers${hint}, one per joint candidate`,
      );
    }
    if (!Number.isFinite(v))
      throw new RewardError(`reward_func returned ${v} for candidate ${j} of ${where} (index ${j} of the array); rewards must be finite numbers`);
    raw.push(v);
  }
  return raw;
}

function processedValues(raw: readonly number[], processor: RewardProcessor, where: string): number[] {
  return raw.map((v, j) => {
    let p: unknown;
    try {
      p = processor(v);
    } catch (err) {
      throw new RewardError(`reward_processor threw on ${v} (candidate ${j} of ${where}): ${errorMessage(err)}`, { cause: err });
    }
    if (typeof p !== "number" || !Number.isFinite(p)) {
      const hint = kindOf(p) === "a Promise" ? " synchronously" : "";
      throw new RewardError(`reward_processor turned ${v} into ${describeValue(p)} for candidate ${j} of ${where}; it must return a finite number${hint}`);
    }
    return p;
  });
}

/**
 * Calls the oracle once for all joint candidates of an item and checks what comes back: one
 * finite number per candidate, before and after reward_processor. Anything else is an error
 * naming the item and showing the value, never a silently replaced one. An asynchronous oracle
 * gets `options.timeoutS` seconds (default 300).
 */
export async function scoreJointCandidates(
  rewardFunc: RewardFunc,
  completions: string[][],
  context: RewardContext,
  processor?: RewardProcessor,
  options: RewardCallOptions = {},
): Promise<ScoredCandidates> {
  const expected = Math.min(...completions.map((c) => c.length));
  const where = options.label === undefined ? describeItem(context) : `${describeItem(context)}, ${options.label}`;
  const raw = rewardValues(await callReward(rewardFunc, completions, context, where, expected, options), expected, where);
  return { raw, processed: processor === undefined ? raw : processedValues(raw, processor, where) };
}

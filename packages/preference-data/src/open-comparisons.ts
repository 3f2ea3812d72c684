/**
 * A round whose comparisons are put to people instead of a reward: both sides answer every item
 * as in {@link collectComparisons}, and each item yields up to `comparisonsPerItem` index-aligned
 * comparisons, still unlabelled. A person's verdict later turns one into a pair ({@link pairOf}).
 * When a reward is given it scores both sides too, for the records and for a fallback that labels
 * what people left undone.
 */
import type { RngStream } from "@pbrl/core-tensor";
import { jointAnswers, sampleBothSides, scoreBothSides, type BothSidesOptions, type JointAnswers } from "./compare.js";
import { selectOpenComparisons, type OpenComparisonOrder } from "./comparison-selection.js";
import { checkCollectionInput } from "./dataset.js";
import { emptyTally, warnTruncation } from "./prompt-length.js";
import type { RewardFunc } from "./types.js";

export interface OpenComparisonOptions extends BothSidesOptions {
  /** Comparisons per item (human_pairs_per_item). */
  comparisonsPerItem: number;
  order: OpenComparisonOrder;
  /** Stream for order="random". */
  selectionRng?: RngStream;
  /** Scores both sides when given (then every comparison carries its rewards). */
  rewardFunc?: RewardFunc | undefined;
}

/** Both sides' processed and raw reward of one comparison's candidate. */
export interface ComparisonRewards {
  target: { processed: number; raw: number };
  comparator: { processed: number; raw: number };
}

export interface OpenComparison extends JointAnswers {
  /** Present when a reward scored the round. */
  rewards?: ComparisonRewards;
}

export interface OpenComparisonResult {
  comparisons: OpenComparison[];
  /** Candidates that could not be used, per side. */
  invalid: { target: number; comparator: number };
  /** Raw rewards of every valid candidate, per side, when a reward scored the round. */
  rawRewards: { target: number[]; comparator: number[] };
}

export async function collectOpenComparisons(o: OpenComparisonOptions): Promise<OpenComparisonResult> {
  checkCollectionInput(o, "comparisons");
  const tally = emptyTally();
  const result: OpenComparisonResult = { comparisons: [], invalid: { target: 0, comparator: 0 }, rawRewards: { target: [], comparator: [] } };
  try {
    for (let start = 0; start < o.items.length; start += o.itemsPerBatch) {
      const batch = await sampleBothSides(o, start, tally);
      const scored =
        o.rewardFunc === undefined
          ? undefined
          : await scoreBothSides(o.rewardFunc, batch, {
              rewardProcessor: o.rewardProcessor,
              rewardConcurrency: o.rewardConcurrency ?? 1,
              rewardTimeoutS: o.rewardTimeoutS,
            });
      batch.sides.forEach((sides, k) => {
        for (const side of ["target", "comparator"] as const)
          sides[side].valid.forEach((ok, j) => {
            if (!ok) result.invalid[side] += 1;
            else if (scored !== undefined) result.rawRewards[side].push(scored[k]![side].raw[j]!);
          });
        // selection in item order, so the stream is consumed the same however the batches fall
        for (const j of selectOpenComparisons(
          { target: sides.target.valid, comparator: sides.comparator.valid },
          o.order,
          o.comparisonsPerItem,
          o.selectionRng,
        )) {
          const c: OpenComparison = jointAnswers(o.agents, batch, k, j);
          const s = scored?.[k];
          if (s !== undefined)
            c.rewards = {
              target: { processed: s.target.processed[j]!, raw: s.target.raw[j]! },
              comparator: { processed: s.comparator.processed[j]!, raw: s.comparator.raw[j]! },
            };
          result.comparisons.push(c);
        }
      });
      o.onProgress?.(Math.min(start + o.itemsPerBatch, o.items.length), o.items.length);
    }
  } finally {
    warnTruncation(tally, o.onWarning);
  }
  return result;
}

import { guardHeap, tf } from "@pbrl/core-tensor";
import type { CausalLM } from "./causal-lm.js";
import { activeKernelFamily, checkMemory, describeModel } from "./memory-check.js";
import { forwardEstimate } from "./memory-estimate.js";
import { gatherRows, matMul, selectedLogProbs } from "./ops.js";

/** One sequence to score: log π(completion | prompt). */
export interface ScoringItem {
  promptIds: readonly number[];
  completionIds: readonly number[];
  /** Per completion token: 1 counts it in the sum, 0 leaves it out (default: all count). */
  mask?: readonly number[];
}

/** A right-padded batch and the positions whose next-token distribution scores a completion token. */
export interface ScoringBatch {
  ids: Int32Array;
  batch: number;
  length: number;
  /** Flat indices into [batch·length] of the positions that predict each scored token. */
  predictRows: Int32Array;
  /** The token each of those positions must predict. */
  targets: Int32Array;
  /** [batch, targets.length]: mask weight of target j in item i's sum (0 where j is not item i's). */
  segment: Float32Array;
  /** Number of completion tokens of each item. */
  counts: number[];
  /** Each row's real length (prompt + completion), so longrope models score every row as if alone. */
  lengths?: Int32Array;
}

export function buildScoringBatch(items: readonly ScoringItem[], padTokenId: number): ScoringBatch {
  if (items.length === 0) throw new RangeError("nothing to score: the batch is empty");
  const length = Math.max(...items.map((it) => it.promptIds.length + it.completionIds.length));
  const batch = items.length;
  const ids = new Int32Array(batch * length).fill(padTokenId);
  const m = items.reduce((a, it) => a + it.completionIds.length, 0);
  const predictRows = new Int32Array(m);
  const targets = new Int32Array(m);
  const segment = new Float32Array(batch * m);
  let j = 0;
  items.forEach((it, i) => {
    if (it.promptIds.length === 0) throw new RangeError(`item ${i}: a prompt needs at least one token to condition the completion on`);
    if (it.mask !== undefined && it.mask.length !== it.completionIds.length) {
      throw new RangeError(`item ${i}: mask has ${it.mask.length} entries for ${it.completionIds.length} completion tokens`);
    }
    ids.set(it.promptIds, i * length);
    ids.set(it.completionIds, i * length + it.promptIds.length);
    it.completionIds.forEach((tok, k) => {
      predictRows[j] = i * length + it.promptIds.length + k - 1;
      targets[j] = tok;
      segment[i * m + j] = it.mask?.[k] ?? 1;
      j++;
    });
  });
  const lengths = Int32Array.from(items, (it) => it.promptIds.length + it.completionIds.length);
  return { ids, batch, length, predictRows, targets, segment, counts: items.map((it) => it.completionIds.length), lengths };
}

/**
 * Differentiable completion log-probabilities for a batch: per scored token [M] and masked sums
 * per item [B]. One forward pass for the whole batch; logits are computed only at the positions
 * that predict completion tokens.
 */
export function completionLogProbs(model: CausalLM, batch: ScoringBatch): { tokens: tf.Tensor1D; sums: tf.Tensor1D } {
  return tf.tidy(() => {
    const m = batch.targets.length;
    if (m === 0) return { tokens: tf.zeros([0]) as tf.Tensor1D, sums: tf.zeros([batch.batch]) as tf.Tensor1D };
    // Right padding needs no key mask: padding comes after every real token, so the causal mask hides it.
    const h = model.hidden({
      ids: batch.ids,
      batch: batch.batch,
      length: batch.length,
      ...(batch.lengths !== undefined ? { sequenceLengths: batch.lengths } : {}),
    });
    const tokens = selectedLogProbs(model.logits(gatherRows(h, batch.predictRows)), batch.targets);
    const seg = tf.tensor2d(batch.segment, [batch.batch, m]);
    const sums = tf.reshape(matMul(seg, tf.reshape(tokens, [m, 1])), [batch.batch]) as tf.Tensor1D;
    return { tokens, sums };
  });
}

export interface ScoreResult {
  /** Log-probability of every completion token, per item. */
  tokenLogProbs: number[][];
  /** Masked sum per item. */
  sums: number[];
}

/** Scores items without gradients, in batches of `batchSize` (default 8). */
export function scoreCompletions(model: CausalLM, items: readonly ScoringItem[], options: { padTokenId?: number; batchSize?: number } = {}): ScoreResult {
  const pad = options.padTokenId ?? model.config.padTokenId ?? 0;
  const size = options.batchSize ?? 8;
  const result: ScoreResult = { tokenLogProbs: [], sums: [] };
  for (let start = 0; start < items.length; start += size) {
    const chunk = items.slice(start, start + size);
    const batch = buildScoringBatch(chunk, pad);
    checkMemory(
      forwardEstimate(model.config, { sequences: batch.batch, seqLen: batch.length, logitRows: batch.targets.length, kernels: activeKernelFamily() }),
      {
        what: `scoring ${batch.batch} sequences × ${batch.length} tokens with this model (${describeModel(model.config)})`,
        advice: "score fewer or shorter sequences at once (batchSize)",
      },
    );
    const { tokens, sums } = guardHeap("scoring", () => completionLogProbs(model, batch));
    const flat = tokens.dataSync();
    const s = sums.dataSync();
    tf.dispose([tokens, sums]);
    let j = 0;
    batch.counts.forEach((count, i) => {
      result.tokenLogProbs.push(Array.from(flat.subarray(j, j + count)));
      result.sums.push(s[i]!);
      j += count;
    });
  }
  return result;
}

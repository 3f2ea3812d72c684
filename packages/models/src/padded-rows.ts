import { positionsFromMask } from "./attention-mask.js";
import { lastTokenIndices } from "./heads.js";

export type PaddingSide = "left" | "right";

/** Token rows padded into one [batch, length] block, with what a forward pass needs. */
export interface PaddedBatch {
  ids: Int32Array;
  batch: number;
  length: number;
  /** 1 for a real token, 0 for padding, [batch, length]. */
  mask: Uint8Array;
  /** Rotary positions counted over real tokens only (every row starts at 0 whatever its padding). */
  positions: Int32Array;
  /** Flat index into [batch·length] of each row's last real token (from the mask, either side). */
  lastRows: Int32Array;
  side: PaddingSide;
}

/** Pads token rows to the longest with `padTokenId` on the given side. */
export function padRows(rows: readonly (readonly number[])[], padTokenId: number, side: PaddingSide): PaddedBatch {
  if (rows.length === 0) throw new RangeError("nothing to score: the batch is empty");
  const length = Math.max(...rows.map((r) => r.length));
  const batch = rows.length;
  const ids = new Int32Array(batch * length).fill(padTokenId);
  const mask = new Uint8Array(batch * length);
  rows.forEach((row, b) => {
    if (row.length === 0) throw new RangeError(`row ${b} has no tokens`);
    const start = b * length + (side === "left" ? length - row.length : 0);
    ids.set(row, start);
    mask.fill(1, start, start + row.length);
  });
  return { ids, batch, length, mask, positions: positionsFromMask(mask, batch, length), lastRows: lastTokenIndices(mask, batch, length), side };
}

/** Each row's number of real tokens (the mask's ones), as longrope models pick their factors by. */
export function realLengths(batch: PaddedBatch): Int32Array {
  const out = new Int32Array(batch.batch);
  for (let i = 0; i < batch.mask.length; i++) out[Math.floor(i / batch.length)]! += batch.mask[i]!;
  return out;
}

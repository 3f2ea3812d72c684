import type { TaskItem } from "./types.js";

/** Collection was asked to run on no items: a run that could only end with nothing learned. */
export class EmptyDatasetError extends Error {
  override name = "EmptyDatasetError";
}

/** What every collection checks before it samples anything. */
export function checkCollectionInput(o: { items: readonly TaskItem[]; itemsPerBatch: number; numCandidates: number }, what: string): void {
  if (o.items.length === 0) {
    throw new EmptyDatasetError(`train_dataset is empty: there are no task items to collect ${what} from; pass a dataset with at least one item`);
  }
  // A batch of 0 items would never advance through the dataset.
  if (!Number.isInteger(o.itemsPerBatch) || o.itemsPerBatch < 1) throw new RangeError(`itemsPerBatch must be an integer ≥ 1, got ${String(o.itemsPerBatch)}`);
  if (!Number.isInteger(o.numCandidates) || o.numCandidates < 1)
    throw new RangeError(`preference_num_candidates must be an integer ≥ 1, got ${String(o.numCandidates)}`);
}

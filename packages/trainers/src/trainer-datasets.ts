/**
 * A run's train and eval datasets, given as items or as dataset sources (a .jsonl/.json/.csv/
 * .parquet file, a dataset folder, a hub id, or a request naming split, subset and revision) that
 * are loaded once, before the run starts and before output_dir is touched.
 */
import { loadDataset, type DatasetSource, type TaskItem } from "@pbrl/preference-data";

/** Items, or where to load them from (see loadDataset in @pbrl/preference-data). */
export type TrainerDataset = readonly TaskItem[] | DatasetSource;

const isItems = (d: TrainerDataset): d is readonly TaskItem[] => Array.isArray(d);

export class RunDatasets {
  private trainItems: readonly TaskItem[] | undefined;
  private evalItems: readonly TaskItem[] | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly given: { trainDataset: TrainerDataset; evalDataset?: TrainerDataset | undefined },
    private readonly log: (line: string) => void,
  ) {
    if (isItems(given.trainDataset)) this.trainItems = given.trainDataset;
    if (given.evalDataset !== undefined && isItems(given.evalDataset)) this.evalItems = given.evalDataset;
  }

  /** Loads the datasets given as sources (train_dataset's split defaults to "train", eval_dataset's to "test"); later calls wait for the first. */
  load(): Promise<void> {
    this.loading ??= (async () => {
      const { trainDataset, evalDataset } = this.given;
      const log = { log: this.log };
      if (!isItems(trainDataset)) this.trainItems = await loadDataset(keyed(trainDataset, "train_dataset"), { ...log, defaultSplit: "train" });
      if (evalDataset !== undefined && !isItems(evalDataset))
        this.evalItems = await loadDataset(keyed(evalDataset, "eval_dataset"), { ...log, defaultSplit: "test" });
    })().catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  /** The train items; the datasets must be loaded. */
  get train(): readonly TaskItem[] {
    if (this.trainItems === undefined) throw new Error("the train dataset is read before it is loaded (RunDatasets.load)");
    return this.trainItems;
  }

  /** The eval items, when an eval dataset is given; the datasets must be loaded. */
  get eval(): readonly TaskItem[] | undefined {
    if (this.given.evalDataset !== undefined && this.evalItems === undefined)
      throw new Error("the eval dataset is read before it is loaded (RunDatasets.load)");
    return this.evalItems;
  }
}

/** The source named after its option in messages (train_dataset: …), unless the request names itself. */
function keyed(source: DatasetSource, key: string): DatasetSource {
  return typeof source === "string" ? { source, key } : { key, ...source };
}

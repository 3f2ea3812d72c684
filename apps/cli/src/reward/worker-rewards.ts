/**
 * reward_func / reward_processor / formatters given as module paths in a run file, run in a worker
 * thread and offered to the trainer as ordinary functions: reward_func asynchronous (the trainer
 * awaits it), reward_processor synchronous (it reads the values the worker computed with the
 * reward), formatters asynchronous (the trainer formats every item once, before the run starts).
 */
import type { AsyncFormatter, Prompt } from "@pbrl/preference-data";
import type { RewardContext, RewardFunc, RewardProcessor } from "@pbrl/trainers";
import { ProcessedValues } from "./processed-values.js";
import { RewardWorker } from "./reward-worker-host.js";

export interface WorkerRewards {
  rewardFunc: RewardFunc;
  rewardProcessor: RewardProcessor | undefined;
  /** The formatters module's, as it exports them (one function, or a list); undefined without one. */
  formatters: AsyncFormatter | AsyncFormatter[] | undefined;
  /** Stops the worker; call it when the run ends, however it ends. */
  close: () => Promise<void>;
}

const listOf = (v: unknown): ArrayLike<unknown> | undefined => (Array.isArray(v) || ArrayBuffer.isView(v) ? (v as unknown as ArrayLike<unknown>) : undefined);

/**
 * Starts the worker for `rewardModule` (else `builtin` runs here), `processorModule` and/or
 * `formattersModule`; the reward module's own `reward_processor` export is used when no processor
 * module is given.
 */
export async function startWorkerRewards(o: {
  rewardModule?: string;
  builtin?: RewardFunc;
  processorModule?: string;
  formattersModule?: string;
  timeoutS: number | null;
}): Promise<WorkerRewards> {
  const worker = await RewardWorker.start({
    ...(o.rewardModule !== undefined ? { rewardModule: o.rewardModule } : {}),
    ...(o.processorModule !== undefined ? { processorModule: o.processorModule } : {}),
    ...(o.formattersModule !== undefined ? { formattersModule: o.formattersModule } : {}),
    timeoutS: o.timeoutS,
  });
  const processed = worker.ready.hasProcessor ? new ProcessedValues() : undefined;
  const rewardFunc: RewardFunc = async (completions: string[][], context: RewardContext) => {
    if (worker.ready.hasReward) {
      const r = await worker.reward(completions, context);
      const list = listOf(r.returned);
      if (processed !== undefined && list !== undefined && r.processed !== undefined) processed.add(list, r.processed);
      return r.returned as number[];
    }
    const returned = await o.builtin!(completions, context);
    const list = listOf(returned);
    if (processed !== undefined && list !== undefined) {
      const values = Array.from(list, (v) => (typeof v === "number" ? v : Number.NaN));
      processed.add(values, (await worker.process(values)).processed ?? []);
    }
    return returned;
  };
  // The trainers read a declared range from the function itself (reward_func.reward_range).
  if (worker.ready.rewardRange !== undefined) Object.assign(rewardFunc, { reward_range: worker.ready.rewardRange });
  else if (!worker.ready.hasReward && o.builtin !== undefined && "reward_range" in o.builtin)
    Object.assign(rewardFunc, { reward_range: (o.builtin as { reward_range: unknown }).reward_range });
  // The trainer checks what a formatter returned (a prompt crosses as the data it is).
  const formatter =
    (index: number): AsyncFormatter =>
    async (item) =>
      (await worker.format(index, item)) as Prompt;
  const shape = worker.ready.formatters;
  return {
    rewardFunc,
    rewardProcessor: processed !== undefined ? (v: number) => processed.take(v) : undefined,
    formatters: shape === undefined ? undefined : shape.shared ? formatter(0) : Array.from({ length: shape.count }, (_, i) => formatter(i)),
    close: () => worker.close(),
  };
}

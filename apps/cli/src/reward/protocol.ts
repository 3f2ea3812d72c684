/**
 * Messages between the CLI and the worker thread that runs a run file's modules: the reward
 * modules, and a formatters module (called once per item before the run starts). Every
 * value crosses by structured clone, so only data travels: strings, numbers, arrays, plain
 * objects, typed arrays. A function, a class instance's methods or a Symbol cannot cross, and the
 * modules' own state (globals, caches, open connections) lives in the worker, not in the CLI.
 */

export interface RewardWorkerData {
  /** Module exporting reward_func (or a default export); absent when reward_func is a built-in. */
  rewardModule?: string;
  /** Module exporting reward_processor (or a default export), when given on its own. */
  processorModule?: string;
  /** Module exporting formatters (or a default export): one function, or a list with one per agent. */
  formattersModule?: string;
}

/** What the formatters module exports: one function for every agent, or a list of `count`. */
export interface FormattersShape {
  shared: boolean;
  count: number;
}

/** What the worker says once its modules are loaded (or could not be). */
export type ReadyMessage =
  | { type: "ready"; hasReward: boolean; hasProcessor: boolean; rewardRange?: [number, number]; formatters?: FormattersShape }
  | {
      type: "load-error";
      key: "reward_func" | "reward_processor" | "formatters";
      file: string;
      name: string;
      message: string;
      frame?: string;
      missing: boolean;
    };

/**
 * One call. `reward` runs reward_func on (completions, context) and, when the worker holds a
 * reward_processor, maps each finite number it returned; `process` only maps `values`; `format`
 * runs formatter `index` (any index, for a shared one) on `item`.
 */
export type CallBody =
  { kind: "reward"; completions: string[][]; context: unknown } | { kind: "process"; values: number[] } | { kind: "format"; index: number; item: unknown };
export type CallRequest = CallBody & { id: number };

/**
 * reward_processor's result for one value: what it returned (a primitive), or what it threw (the
 * value itself where it can cross to the CLI's thread, else its text; the CLI words it).
 */
export type ProcessOutcome = { value: unknown } | { threw: unknown };

export type CallReply =
  { type: "result"; id: number; returned: unknown; processed?: (ProcessOutcome | null)[] } | { type: "error"; id: number; thrown: unknown };

export type WorkerMessage = ReadyMessage | CallReply;

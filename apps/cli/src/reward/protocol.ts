/**
 * Messages between the CLI and the worker thread that runs a run file's reward modules. Every
 * value crosses by structured clone, so only data travels: strings, numbers, arrays, plain
 * objects, typed arrays. A function, a class instance's methods or a Symbol cannot cross, and the
 * modules' own state (globals, caches, open connections) lives in the worker, not in the CLI.
 */

export interface RewardWorkerData {
  /** Module exporting reward_func (or a default export); absent when reward_func is a built-in. */
  rewardModule?: string;
  /** Module exporting reward_processor (or a default export), when given on its own. */
  processorModule?: string;
}

/** What the worker says once its modules are loaded (or could not be). */
export type ReadyMessage =
  | { type: "ready"; hasReward: boolean; hasProcessor: boolean; rewardRange?: [number, number] }
  | { type: "load-error"; key: "reward_func" | "reward_processor"; file: string; name: string; message: string; frame?: string; missing: boolean };

/**
 * One call. `reward` runs reward_func on (completions, context) and, when the worker holds a
 * reward_processor, maps each finite number it returned; `process` only maps `values`.
 */
export type CallBody = { kind: "reward"; completions: string[][]; context: unknown } | { kind: "process"; values: number[] };
export type CallRequest = CallBody & { id: number };

/** reward_processor's result for one value: what it returned (a primitive), or the message it threw. */
export type ProcessOutcome = { value: unknown } | { threw: string };

export type CallReply =
  { type: "result"; id: number; returned: unknown; processed?: (ProcessOutcome | null)[] } | { type: "error"; id: number; message: string };

export type WorkerMessage = ReadyMessage | CallReply;

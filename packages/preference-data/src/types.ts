/** A task item: one row of the user's dataset (a JSON object). */
export type TaskItem = Readonly<Record<string, unknown>>;

/** Builds one agent's prompt from a task item. */
export type Formatter = (item: TaskItem) => string;

/** What the oracle knows besides the completions. */
export interface RewardContext {
  /** The task item being scored. */
  item: TaskItem;
  /** Position of the item in its dataset. */
  itemIndex: number;
  /** Each agent's prompt for this item. */
  prompts: readonly string[];
}

/**
 * The oracle: `completions[agent][candidate]` in, one joint reward per candidate index out,
 * synchronously or as a Promise (an LLM judge is a valid oracle).
 */
export type RewardFunc = (completions: string[][], context: RewardContext) => number[] | Promise<number[]>;

/** Maps each oracle value (e.g. scaling or clipping); identity by default. */
export type RewardProcessor = (reward: number) => number;

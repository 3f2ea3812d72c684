import type { ChatMessage } from "@pbrl/models";

export type { ChatMessage };

/** A task item: one row of the user's dataset (a JSON object). */
export type TaskItem = Readonly<Record<string, unknown>>;

/**
 * One agent's prompt: text, or chat messages (TRL's conversational format,
 * `[{role: "user", content: "…"}]`) that the agent's own tokenizer renders with its chat
 * template (add_generation_prompt=true) before it is tokenized.
 */
export type Prompt = string | readonly ChatMessage[];

/** Builds one agent's prompt from a task item: a string, or a list of chat messages. */
export type Formatter = (item: TaskItem) => Prompt;

/** What the oracle knows besides the completions. */
export interface RewardContext {
  /** The task item being scored. */
  item: TaskItem;
  /** Position of the item in its dataset. */
  itemIndex: number;
  /**
   * Each agent's prompt as text: the formatter's string, or, for chat messages, the text the
   * agent's chat template rendered from them (so round files keep CoMLRL's `prompts: string[]`).
   */
  prompts: readonly string[];
}

/**
 * The oracle: `completions[agent][candidate]` in, one joint reward per candidate index out,
 * synchronously or as a Promise (an LLM judge is a valid oracle).
 */
export type RewardFunc = (completions: string[][], context: RewardContext) => number[] | Promise<number[]>;

/** Maps each oracle value (e.g. scaling or clipping); identity by default. */
export type RewardProcessor = (reward: number) => number;

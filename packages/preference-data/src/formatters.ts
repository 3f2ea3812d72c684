import { describeItem, describeValue, errorMessage } from "./describe.js";
import { settleWithin } from "./deadline.js";
import { RewardTimeoutError } from "./reward.js";
import type { ChatMessage, Formatter, Prompt, TaskItem } from "./types.js";

/**
 * A formatter that may answer later: one running in a worker thread (a `formatters` module in
 * `pbrl train`). The trainers format every item once, before a run starts, so they take these too.
 */
export type AsyncFormatter = (item: TaskItem) => Prompt | Promise<Prompt>;

/** Which data set an item comes from, as errors name it. */
export type DatasetName = "train_dataset" | "eval_dataset";

/**
 * Used when no formatter is given: the item's `prompt` field, as CoMLRL does, when it is a string
 * or a list of chat messages (TRL's conversational format). Anything else gives "", which
 * formatting reports as an empty prompt naming the field.
 */
export const defaultFormatter: Formatter = (item: TaskItem) => {
  const p = item["prompt"];
  return typeof p === "string" || Array.isArray(p) ? (p as Prompt) : "";
};

/** Whose prompt a formatter builds: an agent's, or one role's when one actor writes every role (centralized). */
export type FormatterUnit = "agent" | "role";

/** Which formatter failed on which item, when known (not for a bad formatters list). */
export interface FormatterFailure {
  unit: FormatterUnit;
  /** The agent's or role's index. */
  index: number;
  /** The item's dataset position; negative when the caller did not know it. */
  itemIndex: number;
  item: TaskItem;
  /** The data set the item is in, when the caller said (the trainers format both before a run). */
  dataset?: DatasetName | undefined;
  /**
   * threw: `detail` is the message; timeout: it did not answer in time (`detail` says which
   * limit); returned: neither a string nor a list (`detail`: the value shown); message: a list with
   * an entry that is not `{role, content}` strings (`detail` says which); empty: an empty prompt, or
   * messages without content (`detail`: the value shown); chat: chat messages where only text can
   * be used (`detail`: the value shown).
   */
  kind: "threw" | "timeout" | "returned" | "message" | "empty" | "chat";
  detail: string;
  /** The formatter was the default one (the item's `prompt` field), so the item is what to fix. */
  usedDefault?: boolean;
}

const SHAPE = "a string, or a list of chat messages {role: string, content: string}";

function failureMessage(f: FormatterFailure): string {
  const who = `the formatter of ${f.unit} ${f.index}`;
  const item = `${f.dataset === undefined ? "" : `${f.dataset} `}${describeItem(f)}`;
  switch (f.kind) {
    case "threw":
      return `${who} threw on ${item}: ${f.detail}; fix the formatter or the item`;
    case "timeout":
      return `${who} did not finish on ${item}: ${f.detail}`;
    case "returned":
      return `${who} returned ${f.detail} for ${item}; it must return the ${f.unit}'s prompt as ${SHAPE}`;
    case "message":
      return `${who} returned chat messages for ${item} that cannot be used: ${f.detail}; each message must be {role: string, content: string}`;
    case "empty":
      // Today's silent failure was training on "": say where the prompt should have come from.
      return f.usedDefault === true
        ? `${f.unit} ${f.index}'s prompt for ${item} is empty: with no formatter the prompt is the item's "prompt" field (${SHAPE}), and this item's is ${f.detail}; give every item a non-empty "prompt", or pass formatters`
        : `${who} returned ${f.detail}, an empty prompt, for ${item}; it must return a non-empty prompt (text, or chat messages with some content): fix the formatter or the item`;
    case "chat":
      return `${who} returned chat messages for ${item}, but this caller takes text prompts only (it has no tokenizer to render a chat template with); return the prompt as a string, or collect through a sampler that renders each agent's chat template (formatAgentPrompts)`;
  }
}

export class FormatterError extends Error {
  override name = "FormatterError";
  readonly failure: FormatterFailure | undefined;

  constructor(message: string, options?: { cause?: unknown; failure?: FormatterFailure }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.failure = options?.failure;
  }

  /** The error for a formatter that failed on an item; `cause` is what it threw, if it threw. */
  static at(failure: FormatterFailure, cause?: unknown): FormatterError {
    return new FormatterError(failureMessage(failure), { cause, failure });
  }
}

/**
 * One formatter per agent: none → the default for every agent; a single function → shared;
 * an array → must have exactly `numAgents` entries.
 */
export function resolveFormatters(formatters: Formatter | readonly Formatter[] | undefined, numAgents: number): Formatter[];
export function resolveFormatters(formatters: AsyncFormatter | readonly AsyncFormatter[] | undefined, numAgents: number): AsyncFormatter[];
export function resolveFormatters(formatters: AsyncFormatter | readonly AsyncFormatter[] | undefined, numAgents: number): AsyncFormatter[] {
  if (formatters === undefined) return Array.from({ length: numAgents }, () => defaultFormatter);
  if (typeof formatters === "function") return Array.from({ length: numAgents }, () => formatters);
  if (formatters.length !== numAgents) {
    throw new FormatterError(`formatters: got ${formatters.length} formatter(s) for num_agents=${numAgents}; pass one per agent, or a single one to share`);
  }
  formatters.forEach((f, i) => {
    if (typeof f !== "function")
      throw new FormatterError(`formatters[${i}] is ${describeValue(f)}, not a function; pass functions from a task item to a prompt (${SHAPE})`);
  });
  return [...formatters];
}

export interface FormatOptions {
  /** What the formatters build prompts for (default "agent"); "role" when one actor writes every role. */
  unit?: FormatterUnit;
  /** The data set the item is in, to name it in errors. */
  dataset?: DatasetName | undefined;
}

/** Whether a prompt is a list of chat messages (else it is text). */
export function isChatPrompt(prompt: Prompt): prompt is readonly ChatMessage[] {
  return typeof prompt !== "string";
}

/** What is wrong with a would-be message list, or undefined when every entry is `{role, content}` strings. */
function messageProblem(list: readonly unknown[]): string | undefined {
  for (const [i, m] of list.entries()) {
    if (m === null || typeof m !== "object" || Array.isArray(m)) return `entry ${i} is ${describeValue(m)}, not a message object`;
    const { role, content } = m as Record<string, unknown>;
    if (typeof role !== "string") return `entry ${i} has role ${describeValue(role)}`;
    // Multimodal content parts ([{type: "text", …}]) are not rendered by text-only templates here.
    if (typeof content !== "string") return `entry ${i} (role ${JSON.stringify(role)}) has content ${describeValue(content)}; only string content is supported`;
  }
  return undefined;
}

/** An empty string, no messages, or messages whose contents are all empty: nothing to answer. */
export function isEmptyPrompt(prompt: Prompt): boolean {
  return isChatPrompt(prompt) ? prompt.every((m) => m.content.trim() === "") : prompt.trim() === "";
}

/** Where a formatter runs: whose prompt for which item (see {@link FormatterFailure}). */
interface FormatSite {
  unit: FormatterUnit;
  index: number;
  itemIndex: number;
  item: TaskItem;
  dataset: DatasetName | undefined;
}

/** The error for a formatter that threw (or, asynchronous, rejected or timed out). */
function formatterThrew(err: unknown, site: FormatSite): FormatterError {
  if (err instanceof FormatterError && err.failure !== undefined) {
    const f = err.failure;
    if (f.itemIndex >= 0 || site.itemIndex < 0) return err;
    return FormatterError.at({ ...f, itemIndex: site.itemIndex, ...(site.dataset !== undefined && { dataset: site.dataset }) }, err.cause);
  }
  const kind = err instanceof RewardTimeoutError ? "timeout" : "threw";
  return FormatterError.at({ ...site, kind, detail: errorMessage(err) }, err);
}

/** What a formatter returned, checked: a non-empty text or list of `{role, content}` messages, else a FormatterError. */
function checkedPrompt(p: unknown, f: AsyncFormatter, site: FormatSite): Prompt {
  const at = (kind: FormatterFailure["kind"], detail: string, extra: Partial<FormatterFailure> = {}) => FormatterError.at({ ...site, kind, detail, ...extra });
  if (typeof p !== "string" && !Array.isArray(p)) throw at("returned", describeValue(p));
  if (Array.isArray(p)) {
    const problem = messageProblem(p);
    if (problem !== undefined) throw at("message", problem);
  }
  const prompt = p as Prompt;
  if (isEmptyPrompt(prompt)) {
    const usedDefault = f === defaultFormatter;
    throw at("empty", describeValue(usedDefault ? site.item["prompt"] : prompt), usedDefault ? { usedDefault } : {});
  }
  return prompt;
}

const siteOf = (options: FormatOptions, index: number, item: TaskItem, itemIndex: number): FormatSite => ({
  unit: options.unit ?? "agent",
  index,
  itemIndex,
  item,
  dataset: options.dataset,
});

/**
 * Every agent's prompt for an item: text or chat messages, as its formatter returned it. A
 * formatter that throws, returns anything else (or malformed messages), or an empty prompt is a
 * FormatterError naming the agent (or role), the item and the cause. `itemIndex` < 0: the caller
 * does not know the item's position; when a formatter built from others (a centralized joint
 * prompt) fails that way, the position is filled in here.
 */
export function formatAgentPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number, options: FormatOptions = {}): Prompt[] {
  return formatters.map((f, index) => {
    const site = siteOf(options, index, item, itemIndex);
    let p: unknown;
    try {
      p = f(item);
    } catch (err) {
      throw formatterThrew(err, site);
    }
    return checkedPrompt(p, f, site);
  });
}

/** How long an asynchronous formatter may take, and what stops the wait. */
export interface AsyncFormatOptions extends FormatOptions {
  /** reward_timeout_s: seconds one call may take before it is a FormatterError; null or absent: no limit. */
  timeoutS?: number | null | undefined;
  /** Aborting it stops the wait at once, rejecting with its reason (as it is, not a FormatterError). */
  signal?: AbortSignal | undefined;
}

/**
 * {@link formatAgentPrompts} with formatters that may answer asynchronously (each awaited in turn):
 * a rejection is a FormatterError as a throw is, and a call past `timeoutS` (or a
 * RewardTimeoutError: a worker's call that ran past its limit) one that says it did not finish.
 */
export async function formatAgentPromptsAsync(
  formatters: readonly AsyncFormatter[],
  item: TaskItem,
  itemIndex: number,
  options: AsyncFormatOptions = {},
): Promise<Prompt[]> {
  const prompts: Prompt[] = [];
  const limit = options.timeoutS ?? null;
  for (const [index, f] of formatters.entries()) {
    const site = siteOf(options, index, item, itemIndex);
    let p: unknown;
    try {
      const late = () =>
        new RewardTimeoutError(
          `it did not return within reward_timeout_s=${limit} s; make it faster, or raise reward_timeout_s (null: no limit)`,
          limit ?? 0,
          itemIndex,
        );
      p = await settleWithin(new Promise<unknown>((resolve) => resolve(f(item))), limit, late, options.signal);
    } catch (err) {
      if (options.signal?.aborted === true && err === options.signal.reason) throw err;
      throw formatterThrew(err, site);
    }
    prompts.push(checkedPrompt(p, f, site));
  }
  return prompts;
}

/**
 * Every agent's prompt for an item as text, for callers that encode prompts as plain text: as
 * {@link formatAgentPrompts}, and chat messages are a FormatterError (they need the agent's
 * tokenizer to be rendered; the samplers and collections in this package render them).
 */
export function formatPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number, options: FormatOptions = {}): string[] {
  return formatAgentPrompts(formatters, item, itemIndex, options).map((p, index) => {
    if (isChatPrompt(p)) throw FormatterError.at({ ...siteOf(options, index, item, itemIndex), kind: "chat", detail: describeValue(p) });
    return p;
  });
}

import { describeItem, describeValue, errorMessage } from "./describe.js";
import type { ChatMessage, Formatter, Prompt, TaskItem } from "./types.js";

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
  /**
   * threw: `detail` is the message; returned: neither a string nor a list (`detail`: the value
   * shown); message: a list with an entry that is not `{role, content}` strings (`detail` says
   * which); empty: an empty prompt, or messages without content (`detail`: the value shown);
   * chat: chat messages where only text can be used (`detail`: the value shown).
   */
  kind: "threw" | "returned" | "message" | "empty" | "chat";
  detail: string;
  /** The formatter was the default one (the item's `prompt` field), so the item is what to fix. */
  usedDefault?: boolean;
}

const SHAPE = "a string, or a list of chat messages {role: string, content: string}";

function failureMessage(f: FormatterFailure): string {
  const who = `the formatter of ${f.unit} ${f.index}`;
  const item = describeItem(f);
  switch (f.kind) {
    case "threw":
      return `${who} threw on ${item}: ${f.detail}; fix the formatter or the item`;
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
export function resolveFormatters(formatters: Formatter | readonly Formatter[] | undefined, numAgents: number): Formatter[] {
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

/**
 * Every agent's prompt for an item: text or chat messages, as its formatter returned it. A
 * formatter that throws, returns anything else (or malformed messages), or an empty prompt is a
 * FormatterError naming the agent (or role), the item and the cause. `itemIndex` < 0: the caller
 * does not know the item's position; when a formatter built from others (a centralized joint
 * prompt) fails that way, the position is filled in here.
 */
export function formatAgentPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number, options: FormatOptions = {}): Prompt[] {
  const unit = options.unit ?? "agent";
  return formatters.map((f, index) => {
    let p: unknown;
    try {
      p = f(item);
    } catch (err) {
      if (err instanceof FormatterError && err.failure !== undefined) {
        if (err.failure.itemIndex < 0 && itemIndex >= 0) throw FormatterError.at({ ...err.failure, itemIndex }, err.cause);
        throw err;
      }
      throw FormatterError.at({ unit, index, itemIndex, item, kind: "threw", detail: errorMessage(err) }, err);
    }
    const at = (kind: FormatterFailure["kind"], detail: string, extra: Partial<FormatterFailure> = {}) =>
      FormatterError.at({ unit, index, itemIndex, item, kind, detail, ...extra });
    if (typeof p !== "string" && !Array.isArray(p)) throw at("returned", describeValue(p));
    if (Array.isArray(p)) {
      const problem = messageProblem(p);
      if (problem !== undefined) throw at("message", problem);
    }
    const prompt = p as Prompt;
    if (isEmptyPrompt(prompt)) {
      const usedDefault = f === defaultFormatter;
      throw at("empty", describeValue(usedDefault ? item["prompt"] : prompt), usedDefault ? { usedDefault } : {});
    }
    return prompt;
  });
}

/**
 * Every agent's prompt for an item as text, for callers that encode prompts as plain text: as
 * {@link formatAgentPrompts}, and chat messages are a FormatterError (they need the agent's
 * tokenizer to be rendered; the samplers and collections in this package render them).
 */
export function formatPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number, options: FormatOptions = {}): string[] {
  const unit = options.unit ?? "agent";
  return formatAgentPrompts(formatters, item, itemIndex, options).map((p, index) => {
    if (isChatPrompt(p)) throw FormatterError.at({ unit, index, itemIndex, item, kind: "chat", detail: describeValue(p) });
    return p;
  });
}

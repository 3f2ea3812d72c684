import { describeItem, describeValue, errorMessage } from "./describe.js";
import type { Formatter, TaskItem } from "./types.js";

/** Used when no formatter is given: the item's `prompt` field, as CoMLRL does. */
export const defaultFormatter: Formatter = (item: TaskItem) => (typeof item["prompt"] === "string" ? item["prompt"] : "");

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
  /** It threw (`detail`: the message), or returned a non-string (`detail`: the value shown). */
  kind: "threw" | "returned";
  detail: string;
}

function failureMessage(f: FormatterFailure): string {
  const who = `the formatter of ${f.unit} ${f.index}`;
  const item = describeItem(f);
  return f.kind === "threw"
    ? `${who} threw on ${item}: ${f.detail}; fix the formatter or the item`
    : `${who} returned ${f.detail} for ${item}; it must return the ${f.unit}'s prompt as a string`;
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
    if (typeof f !== "function") throw new FormatterError(`formatters[${i}] is ${describeValue(f)}, not a function; pass functions from a task item to a prompt string`);
  });
  return [...formatters];
}

export interface FormatOptions {
  /** What the formatters build prompts for (default "agent"); "role" when one actor writes every role. */
  unit?: FormatterUnit;
}

/**
 * Every agent's prompt for an item; a formatter must return a string. A formatter that throws or
 * returns anything else is a FormatterError naming the agent (or role), the item and the cause.
 * `itemIndex` < 0: the caller does not know the item's position; when a formatter built from
 * others (a centralized joint prompt) fails that way, the position is filled in here.
 */
export function formatPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number, options: FormatOptions = {}): string[] {
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
    if (typeof p !== "string") throw FormatterError.at({ unit, index, itemIndex, item, kind: "returned", detail: describeValue(p) });
    return p;
  });
}

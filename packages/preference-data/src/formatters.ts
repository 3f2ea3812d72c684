import type { Formatter, TaskItem } from "./types.js";

/** Used when no formatter is given: the item's `prompt` field, as CoMLRL does. */
export const defaultFormatter: Formatter = (item: TaskItem) => (typeof item["prompt"] === "string" ? item["prompt"] : "");

export class FormatterError extends Error {
  override name = "FormatterError";
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
    if (typeof f !== "function") throw new FormatterError(`formatters[${i}] is not a function`);
  });
  return [...formatters];
}

/** Every agent's prompt for an item; a formatter must return a string. */
export function formatPrompts(formatters: readonly Formatter[], item: TaskItem, itemIndex: number): string[] {
  return formatters.map((f, i) => {
    const p = f(item);
    if (typeof p !== "string") throw new FormatterError(`formatter of agent ${i} returned ${typeof p} for item ${itemIndex}; it must return a string`);
    return p;
  });
}

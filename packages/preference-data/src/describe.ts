/** How error messages show what a user's function gave back or threw, so the type is never a guess. */
import { errorText, valueText } from "@pbrl/core-tensor";
import type { TaskItem } from "./types.js";

/** "item 5 (id "abc")": how errors name an item; a negative index means the position is not known here. */
export function describeItem(context: { item: TaskItem; itemIndex: number }): string {
  const id = context.item["id"];
  const idText = typeof id === "string" || typeof id === "number" ? `id ${JSON.stringify(id)}` : undefined;
  if (context.itemIndex < 0) return idText === undefined ? "an item" : `the item with ${idText}`;
  return `item ${context.itemIndex}${idText === undefined ? "" : ` (${idText})`}`;
}

const MAX_SHOWN = 80;

function article(kind: string): string {
  return /^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`;
}

/** The kind of a value in words: "a string", "an array", "null", "a Promise", … */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (ArrayBuffer.isView(value)) return article(value.constructor.name);
  if (typeof value === "object" && typeof (value as { then?: unknown }).then === "function") return "a Promise";
  return article(typeof value);
}

/**
 * A value as a user would write it, followed by its kind unless the text already says it:
 * `"0.5" (a string)`, `NaN`, `[1,"2"] (an array)`, `undefined`. JSON, so a string shows its quotes;
 * long values are cut.
 */
export function describeValue(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value === "number") return `${value} (a number)`; // NaN and ±Infinity have no JSON form
  if (typeof value === "bigint") return `${value}n (a bigint)`;
  if (typeof value === "function") return "a function";
  if (kindOf(value) === "a Promise") return "a Promise";
  let text = valueText(ArrayBuffer.isView(value) ? Array.from(value as unknown as ArrayLike<number>) : value);
  if (text.length > MAX_SHOWN) text = `${text.slice(0, MAX_SHOWN - 1)}…`;
  return `${text} (${kindOf(value)})`;
}

/** The message of anything thrown: an Error's message, a thrown string as is, any other value as JSON (core-tensor's errorText). */
export const errorMessage: (err: unknown) => string = errorText;

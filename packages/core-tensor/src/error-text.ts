/**
 * Anything thrown, as text for a message. JavaScript lets user code throw (or reject with) any
 * value: `String({ code: 1 })` is "[object Object]", which tells the user nothing, so values other
 * than Errors and strings are shown as JSON. The text is capped: a thrown object may be huge, and
 * one that holds a cycle, a BigInt or a throwing getter must still give a message, never a crash.
 */

/** The longest text of a thrown non-Error value; longer ones are cut with "…". */
export const MAX_THROWN_TEXT = 500;

const cap = (text: string): string => (text.length > MAX_THROWN_TEXT ? `${text.slice(0, MAX_THROWN_TEXT - 1)}…` : text);

/** JSON of `value` with cycles shown as "[Circular]" and BigInts as "<n>n"; undefined when it has none. */
function json(value: unknown): string | undefined {
  const seen: object[] = [];
  return JSON.stringify(value, function (this: unknown, _key, v: unknown) {
    if (typeof v === "bigint") return `${v}n`;
    if (typeof v !== "object" || v === null) return v;
    // `seen` holds the ancestors of v: JSON.stringify calls this depth-first, with `this` the holder.
    while (seen.length > 0 && seen[seen.length - 1] !== this) seen.pop();
    if (seen.includes(v)) return "[Circular]";
    seen.push(v);
    return v;
  });
}

/**
 * A value as the user would write it, uncapped: JSON for objects and arrays (`{"code":1}`, with
 * "[Circular]" for a cycle), `42`, `NaN`, `12n`, `undefined`, `a function (name)`. Never throws.
 */
export function valueText(value: unknown): string {
  if (typeof value === "function") return `a function${value.name === "" ? "" : ` (${value.name})`}`;
  if (typeof value === "symbol" || typeof value === "undefined") return String(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "number") return String(value); // NaN and ±Infinity have no JSON form
  try {
    return json(value) ?? tag(value);
  } catch {
    return tag(value); // a getter or toJSON that throws
  }
}

/** "[object Object]", "[object Foo]": the last resort. A revoked Proxy refuses even that. */
function tag(value: unknown): string {
  try {
    return Object.prototype.toString.call(value);
  } catch {
    return "an object that cannot be read";
  }
}

/** `instanceof Error`, which a revoked Proxy answers by throwing. */
function isError(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

/**
 * The message of anything thrown: an Error's message (its name when the message is empty), a
 * thrown string as it is, and any other value as "a non-Error value was thrown: <JSON>".
 */
export function errorText(err: unknown): string {
  if (isError(err)) return err.message !== "" ? err.message : err.name;
  if (typeof err === "string") return err;
  return `a non-Error value was thrown: ${cap(valueText(err))}`;
}

/** `err` if it is an Error, else an Error whose message is {@link errorText} (the value kept as its cause). */
export function asError(err: unknown): Error {
  return isError(err) ? err : new Error(errorText(err), { cause: err });
}

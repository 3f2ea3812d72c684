/**
 * Field builders for the trainer configs. Each field knows what it accepts, in words for errors
 * ("<field>: got <value>; expected <what is accepted>") and in short for tables, and (added where
 * the configs declare it, with zod's `.describe`) what it does: `pbrl config fields`, the JSON
 * Schema and docs/config-reference.md are all read from these.
 */
import { z } from "zod";
import { closestName } from "./closest.js";

/** What pbrl keeps about a field besides its zod type, in zod's metadata registry. */
export interface FieldMeta {
  /** What the field accepts, in words: the end of "got X; expected …". */
  accepts: string;
  /** The type in a few characters, for tables: `int ≥ 1 | null`. */
  typeLabel: string;
  /** A choice's canonical names. */
  choices?: readonly string[];
  /** A choice's other spellings, each mapped to the name it stands for. */
  aliases?: Readonly<Record<string, string>>;
  /** One line: what the field does. */
  description?: string;
}

/** Registers what a field accepts; `.describe(…)` on the result adds what it does (zod keeps both). */
export const accepting = <T extends z.ZodType>(schema: T, accepts: string, typeLabel: string, extra: Pick<FieldMeta, "choices" | "aliases"> = {}): T =>
  schema.meta({ accepts, typeLabel, ...extra });

const isStringRecord = (v: unknown): v is Record<string, string> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string");

/** The metadata of a field (inherited through zod's clones, so `.describe` keeps `accepts`). */
export function fieldMeta(schema: z.ZodType): FieldMeta {
  const m = z.globalRegistry.get(schema) ?? {};
  const str = (k: string) => (typeof m[k] === "string" ? (m[k] as string) : undefined);
  const meta: FieldMeta = { accepts: str("accepts") ?? "a valid value", typeLabel: str("typeLabel") ?? "value" };
  if (Array.isArray(m["choices"])) meta.choices = (m["choices"] as unknown[]).filter((c): c is string => typeof c === "string");
  if (isStringRecord(m["aliases"])) meta.aliases = m["aliases"];
  const description = str("description");
  if (description !== undefined) meta.description = description;
  return meta;
}

export const acceptsOf = (schema: z.ZodType): string => fieldMeta(schema).accepts;

/**
 * The problem with a field's value: what was given and what is accepted, and for a choice that
 * looks like a typo of a name, that name first (a list of twenty names hides the one meant).
 */
export function problemOf(key: string, schema: z.ZodType, value: unknown, shown: string): string {
  const { accepts, choices, aliases, typeLabel } = fieldMeta(schema);
  if (typeLabel.startsWith("int") && typeof value === "number" && value > Number.MAX_SAFE_INTEGER && Number.isFinite(value))
    return `${key}: ${aboveSafeInteger(shown, key, true)}`;
  if (choices !== undefined && typeof value === "string") {
    const word = value.trim().toLowerCase();
    // Tighter than for field names: a one- or two-letter value is no typo of "mp" or "v".
    const near = closestName(word, [...choices, ...Object.keys(aliases ?? {})], Math.min(Math.max(1, Math.floor(word.length / 3)), word.length - 1));
    if (near !== undefined) return `${key}: got ${shown}; did you mean ${JSON.stringify(near)}? (${accepts})`;
  }
  return `${key}: got ${shown}; expected ${accepts}`;
}

/**
 * Why an integer above 2^53 − 1 is refused: JavaScript's numbers hold it only approximately (seeds
 * 2^53 and 2^53 + 1 would be one seed). A number read from a file or a key=value override has
 * already been rounded (`asRead`), so the message says the value shown may not be the one written.
 */
export function aboveSafeInteger(shown: string, what: string, asRead: boolean): string {
  const read = asRead ? " (a larger one is rounded when it is read, so this is the value as read)" : "";
  return `${shown} is above 2^53 − 1 (${Number.MAX_SAFE_INTEGER}), the largest integer JavaScript holds exactly${read}; use a smaller ${what}`;
}

export const int = (min: number, def: number) => accepting(z.number().int().min(min).default(def), `an integer ≥ ${min}`, `int ≥ ${min}`);
export const intOrNull = (min: number, def: number | null) =>
  accepting(z.number().int().min(min).nullable().default(def), `an integer ≥ ${min}, or null`, `int ≥ ${min} | null`);
export const positive = (def: number) => accepting(z.number().gt(0).refine(Number.isFinite).default(def), "a finite number > 0", "number > 0");
export const positiveOrNull = (def: number | null) =>
  accepting(z.number().gt(0).refine(Number.isFinite).nullable().default(def), "a finite number > 0, or null", "number > 0 | null");
export const nonNegative = (def: number) => accepting(z.number().min(0).refine(Number.isFinite).default(def), "a finite number ≥ 0", "number ≥ 0");
export const finite = (def: number) => accepting(z.number().refine(Number.isFinite).default(def), "a finite number", "number");
export const finiteOrNull = (def: number | null) =>
  accepting(z.number().refine(Number.isFinite).nullable().default(def), "a finite number, or null", "number | null");
export const unitInterval = (def: number) => accepting(z.number().gt(0).max(1).default(def), "a number in (0, 1]", "number in (0, 1]");
export const bool = (def: boolean) => accepting(z.boolean().default(def), "true or false", "bool");
export const text = (def: string) => accepting(z.string().min(1).default(def), "a non-empty string", "string");
export const textOrNull = (def: string | null) => accepting(z.string().min(1).nullable().default(def), "a non-empty string, or null", "string | null");

/**
 * A choice among names; the input is trimmed and lower-cased first (aliases map to names). Its
 * input type is the union of the names and aliases, so a misspelled value in TypeScript code
 * fails to compile (files and key=value arguments are checked when the config is built).
 */
export function choice<const T extends readonly [string, ...string[]], const A extends string = never>(
  values: T,
  def: T[number],
  aliases: Readonly<Record<A, T[number]>> = {} as Record<A, T[number]>,
): z.ZodType<T[number], T[number] | A | undefined> {
  const byAlias: Readonly<Record<string, T[number]>> = aliases;
  const names = [...values, ...Object.keys(aliases)];
  return accepting(
    z
      .preprocess((v) => {
        if (typeof v !== "string") return v;
        const s = v.trim().toLowerCase();
        return byAlias[s] ?? s;
      }, z.enum(values))
      .default(def as never),
    `one of ${names.map((n) => JSON.stringify(n)).join(", ")}`,
    values.join(" | "),
    { choices: values, aliases: byAlias },
  ) as unknown as z.ZodType<T[number], T[number] | A | undefined>;
}

/** Devices: null (the backend's device), one name, or one per agent. */
export const devices = () =>
  accepting(
    z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .nullable()
      .default(null),
    "null, a device name, or a non-empty list of device names",
    "string | string[] | null",
  );

/** lora_target_modules: null (PEFT's default for the family), "all-linear", or a non-empty list of module names. */
export const targetModules = () =>
  accepting(
    z
      .union([z.literal("all-linear"), z.array(z.string().min(1)).min(1)])
      .nullable()
      .default(null),
    'null (PEFT\'s default for the model family), "all-linear", or a non-empty list of module names such as ["q_proj", "v_proj"]',
    'string[] | "all-linear" | null',
  );

/** A fraction in [0, 1) (dropout rates). */
export const fraction = (def: number) => accepting(z.number().min(0).lt(1).default(def), "a number in [0, 1)", "number in [0, 1)");

/**
 * Field builders for the trainer configs. Each field knows how to describe what it accepts, so
 * every validation error reads "<field>: got <value>; expected <what is accepted>".
 */
import { z } from "zod";

const describe = <T extends z.ZodType>(schema: T, accepts: string): T => schema.meta({ accepts });

export function acceptsOf(schema: z.ZodType): string {
  return (z.globalRegistry.get(schema)?.["accepts"] as string | undefined) ?? "a valid value";
}

export const int = (min: number, def: number) => describe(z.number().int().min(min).default(def), `an integer ≥ ${min}`);
export const intOrNull = (min: number, def: number | null) => describe(z.number().int().min(min).nullable().default(def), `an integer ≥ ${min}, or null`);
export const positive = (def: number) => describe(z.number().gt(0).refine(Number.isFinite).default(def), "a finite number > 0");
export const positiveOrNull = (def: number | null) => describe(z.number().gt(0).refine(Number.isFinite).nullable().default(def), "a finite number > 0, or null");
export const nonNegative = (def: number) => describe(z.number().min(0).refine(Number.isFinite).default(def), "a finite number ≥ 0");
export const finite = (def: number) => describe(z.number().refine(Number.isFinite).default(def), "a finite number");
export const finiteOrNull = (def: number | null) => describe(z.number().refine(Number.isFinite).nullable().default(def), "a finite number, or null");
export const unitInterval = (def: number) => describe(z.number().gt(0).max(1).default(def), "a number in (0, 1]");
export const bool = (def: boolean) => describe(z.boolean().default(def), "true or false");
export const text = (def: string) => describe(z.string().min(1).default(def), "a non-empty string");
export const textOrNull = (def: string | null) => describe(z.string().min(1).nullable().default(def), "a non-empty string, or null");

/** A choice among names; the input is trimmed and lower-cased first (aliases map to names). */
export function choice<const T extends readonly [string, ...string[]]>(values: T, def: T[number], aliases: Record<string, T[number]> = {}) {
  const names = [...values, ...Object.keys(aliases)];
  return describe(
    z
      .preprocess((v) => {
        if (typeof v !== "string") return v;
        const s = v.trim().toLowerCase();
        return aliases[s] ?? s;
      }, z.enum(values))
      .default(def as never),
    `one of ${names.map((n) => JSON.stringify(n)).join(", ")}`,
  );
}

/** Devices: null (the backend's device), one name, or one per agent. */
export const devices = () => describe(z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).nullable().default(null), 'null, a device name, or a non-empty list of device names');

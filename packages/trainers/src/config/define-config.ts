import type { z } from "zod";
import { closestName } from "./closest.js";
import { problemOf } from "./fields.js";

/** Every problem of a config at once, each naming the field, the bad value and what is accepted. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    readonly configName: string,
    readonly problems: string[],
  ) {
    super(`invalid ${configName}:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** A rule across fields; `check` returns a message (without the field name) when it fails. */
export interface ConfigRule<C> {
  field: keyof C & string;
  /** Fields the rule reads; it is skipped when one of them is already invalid. */
  uses: readonly (keyof C & string)[];
  check: (config: C) => string | undefined;
}

export type Fields = Record<string, z.ZodType>;
export type ConfigOf<F extends Fields> = { -readonly [K in keyof F]: z.output<F[K]> };
export type ConfigInputOf<F extends Fields> = { [K in keyof F]?: z.input<F[K]> };

/** Fields whose values are secrets: errors say a value was given, never which. */
const SECRET_FIELD = /(^|_)key$/;

function show(v: unknown): string {
  if (typeof v === "number" && !Number.isFinite(v)) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v); // a BigInt, a cycle
  }
}

/** A key as the user can find it in their file: quoted unless it reads as a field name. */
const showKey = (key: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : JSON.stringify(key));

/**
 * Validates `input` field by field (so one bad field never hides another), then the rules
 * between fields whose inputs were valid. Unknown keys are rejected with the closest valid name.
 */
export function buildConfig<F extends Fields>(name: string, fields: F, rules: readonly ConfigRule<ConfigOf<F>>[], input: unknown): ConfigOf<F> {
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new ConfigError(name, [`expected an object of fields, got ${show(input)}`]);
  const given = input as Record<string, unknown>;
  const problems: string[] = [];
  const known = Object.keys(fields);
  for (const key of Object.keys(given)) {
    if (Object.hasOwn(fields, key)) continue;
    const near = closestName(key, known);
    problems.push(`${showKey(key)}: unknown field${near ? ` (did you mean "${near}"?)` : ""}`);
  }
  const out: Record<string, unknown> = {};
  const invalid = new Set<string>();
  for (const [key, schema] of Object.entries(fields)) {
    const r = schema.safeParse(given[key]);
    if (r.success) {
      out[key] = r.data;
    } else {
      problems.push(SECRET_FIELD.test(key) ? problemOf(key, schema, undefined, "a value (not shown)") : problemOf(key, schema, given[key], show(given[key])));
      invalid.add(key);
      out[key] = schema.parse(undefined);
    }
  }
  const config = out as ConfigOf<F>;
  for (const rule of rules) {
    if (rule.uses.some((f) => invalid.has(f)) || invalid.has(rule.field)) continue;
    const message = rule.check(config);
    if (message !== undefined) problems.push(`${rule.field}: ${message}`);
  }
  if (problems.length > 0) throw new ConfigError(name, problems);
  return config;
}

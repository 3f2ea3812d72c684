/**
 * What a config's fields are, read from their schemas: rows for tables and docs, and a JSON Schema
 * for editors (yaml-language-server, VS Code), so help, docs and validation cannot drift apart.
 */
import { z } from "zod";
import type { Fields } from "./define-config.js";
import { fieldMeta } from "./fields.js";

export type JsonSchema = z.core.JSONSchema.JSONSchema;

export interface FieldDoc {
  name: string;
  /** The type in short: `int ≥ 1 | null`, `current | model | …`. */
  typeLabel: string;
  /** What is accepted, in words (as validation errors say it). */
  accepts: string;
  /** The value a config gets when the field is not given (JSON). */
  default: unknown;
  description: string;
  /** A choice's canonical names and its aliases (alias → name). */
  choices?: readonly string[];
  aliases?: Readonly<Record<string, string>>;
}

/** The fields of a config in declaration order; a field without a description reads "". */
export function fieldDocs(fields: Fields): FieldDoc[] {
  return Object.entries(fields).map(([name, schema]) => {
    const meta = fieldMeta(schema);
    const doc: FieldDoc = { name, typeLabel: meta.typeLabel, accepts: meta.accepts, default: schema.parse(undefined), description: meta.description ?? "" };
    if (meta.choices !== undefined) doc.choices = meta.choices;
    if (meta.aliases !== undefined && Object.keys(meta.aliases).length > 0) doc.aliases = meta.aliases;
    return doc;
  });
}

/** Draft-07: the version every YAML/JSON editor's schema support reads. */
const TARGET = "draft-07";

/**
 * One field as JSON Schema (draft-07) with its description and default. zod writes the type; a
 * choice's enum gets its aliases too, since the config accepts them (zod sees only the names
 * behind the lower-casing preprocess, and drops the default there).
 */
export function fieldJsonSchema(schema: z.ZodType): JsonSchema {
  // An empty metadata registry: pbrl's own keys (accepts, typeLabel, …) are no JSON Schema keywords.
  const { $schema: _, ...out } = z.toJSONSchema(schema, { io: "input", target: TARGET, metadata: z.registry(), unrepresentable: "any" });
  const meta = fieldMeta(schema);
  const typed: JsonSchema = meta.choices !== undefined ? { type: "string", enum: [...meta.choices, ...Object.keys(meta.aliases ?? {})] } : out;
  return { ...(meta.description !== undefined ? { description: meta.description } : {}), ...typed, default: schema.parse(undefined) };
}

/**
 * A config as a JSON Schema object: every field, no other key (`extra` adds keys a file may hold
 * besides the config's, such as a run file's `trainer`).
 */
export function configJsonSchema(fields: Fields, o: { title: string; description?: string; extra?: Record<string, JsonSchema> }): JsonSchema {
  const properties: Record<string, JsonSchema> = { ...o.extra };
  for (const [name, schema] of Object.entries(fields)) properties[name] = fieldJsonSchema(schema);
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    title: o.title,
    ...(o.description !== undefined ? { description: o.description } : {}),
    type: "object",
    properties,
    additionalProperties: false,
  };
}

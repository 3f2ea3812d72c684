/**
 * Readers of config.json number fields. A bad number is an error naming the field, the value and
 * the file (`where`) here, before any weight is read: a config with rms_norm_eps ≤ 0 or a
 * non-finite rope_theta builds a model that only produces NaN, which used to surface much later
 * as a run that "collected 0 pairs".
 */
import { ModelConfigError } from "./config-error.js";

export type Json = Record<string, unknown>;

/** Numbers as JSON would not print them: JSON.stringify(Infinity) is "null". */
function show(v: unknown): string {
  return typeof v === "number" ? String(v) : (JSON.stringify(v) ?? String(v));
}

export function num(raw: Json, key: string, where: string, fallback?: number): number {
  const v = raw[key];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    throw new ModelConfigError(`${where}: missing required field "${key}"`);
  }
  if (typeof v !== "number" || !Number.isFinite(v)) throw new ModelConfigError(`${where}: field "${key}" must be a finite number, got ${show(v)}`);
  return v;
}

export function posInt(raw: Json, key: string, where: string, fallback?: number): number {
  const v = num(raw, key, where, fallback);
  if (!Number.isSafeInteger(v) || v <= 0) throw new ModelConfigError(`${where}: field "${key}" must be a positive integer, got ${v}`);
  return v;
}

/**
 * A number the model divides by or raises to a power, which must be > 0 — in float32 too, since
 * the model computes in float32 (1e-50 would become 0 there). `why` says what breaks and `usual`
 * what checkpoints normally hold, for the message.
 */
export function positive(raw: Json, key: string, where: string, fallback: number | undefined, why: string, usual: string): number {
  const v = raw[key] ?? fallback;
  if (typeof v === "number" && Number.isFinite(v) && Math.fround(v) > 0) return v;
  if (v === undefined) throw new ModelConfigError(`${where}: missing required field "${key}"`);
  throw new ModelConfigError(
    `${where}: field "${key}" must be a finite number > 0, got ${show(v)}: ${why}. Set it to the value the model was trained with (${usual}).`,
  );
}

/** A JSON object field, or undefined when absent or null. */
export function optObject(raw: Json, key: string, where: string): Json | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw new ModelConfigError(`${where}: field "${key}" must be an object, got ${show(v)}`);
  return v as Json;
}

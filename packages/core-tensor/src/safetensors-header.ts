/**
 * Validation of a safetensors header, by the rules of the reference implementation (the Rust
 * `safetensors` crate that Python and transformers use): a JSON object of tensors, each with a
 * known dtype, a shape of non-negative integers and [begin, end] byte offsets that match the
 * shape; the tensors tile the data section exactly, without overlaps or gaps; `__metadata__`
 * maps strings to strings. Anything else is a SafetensorsError naming the file and the entry, so
 * a corrupt download fails here instead of as a TypeError or a wrong tensor later.
 */
import { SafetensorsError } from "./safetensors-error.js";

export type SafetensorsDtype = "F64" | "F32" | "F16" | "BF16" | "I64" | "I32" | "I16" | "I8" | "U8" | "BOOL";

export const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };

export interface HeaderTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  begin: number;
  end: number;
}

export interface ParsedHeader {
  tensors: HeaderTensor[];
  metadata: Record<string, string>;
}

const CORRUPT = "the file is corrupt or not safetensors; download or save it again";

/** A short description of a JSON value for messages. */
function describe(v: unknown): string {
  if (v === undefined) return "nothing (the field is missing)";
  if (v === null) return "null";
  if (Array.isArray(v)) return `an array (${JSON.stringify(v).slice(0, 40)})`;
  if (typeof v === "object") return "an object";
  if (typeof v === "number") return String(v);
  return JSON.stringify(v).slice(0, 40);
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

function isDtype(v: unknown): v is SafetensorsDtype {
  return typeof v === "string" && Object.hasOwn(DTYPE_BYTES, v);
}

function parseMetadata(raw: unknown, source: string): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== "object" || Array.isArray(raw))
    throw new SafetensorsError(`${source}: __metadata__ must be an object of strings, got ${describe(raw)}; ${CORRUPT}`);
  const bad = Object.entries(raw).find(([, v]) => typeof v !== "string");
  if (bad !== undefined) throw new SafetensorsError(`${source}: __metadata__ "${bad[0]}" must be a string, got ${describe(bad[1])}; ${CORRUPT}`);
  // fromEntries defines "__proto__" as a plain key instead of setting the prototype.
  return Object.fromEntries(Object.entries(raw as Record<string, string>));
}

function parseTensor(name: string, raw: unknown, dataLen: number, source: string): HeaderTensor {
  const where = `${source}: tensor "${name}"`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new SafetensorsError(`${where} must be an object {dtype, shape, data_offsets}, got ${describe(raw)}; ${CORRUPT}`);
  const e = raw as Record<string, unknown>;
  if (!isDtype(e["dtype"]))
    throw new SafetensorsError(`${where} has unsupported dtype ${describe(e["dtype"])}; supported: ${Object.keys(DTYPE_BYTES).join(", ")}`);
  const dtype = e["dtype"];
  const shape = e["shape"];
  if (!Array.isArray(shape) || !shape.every(isCount))
    throw new SafetensorsError(`${where}: shape must be an array of integers ≥ 0, got ${describe(shape)}; ${CORRUPT}`);
  const offsets = e["data_offsets"];
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) || offsets[0]! > offsets[1]!) {
    throw new SafetensorsError(`${where}: data_offsets must be [begin, end] with integers 0 ≤ begin ≤ end, got ${describe(offsets)}; ${CORRUPT}`);
  }
  const [begin, end] = offsets as [number, number];
  const bytes = shape.reduce((a: number, d: number) => a * d, DTYPE_BYTES[dtype]);
  if (end - begin !== bytes || end > dataLen) {
    throw new SafetensorsError(
      `${where}: data_offsets [${begin}, ${end}] do not match shape [${shape}] of ${dtype} within ${dataLen} data bytes (truncated file?)`,
    );
  }
  return { name, dtype, shape: [...shape], begin, end };
}

/** The tensors must cover the data section exactly once, in some order, as the reference implementation requires. */
function checkLayout(tensors: readonly HeaderTensor[], dataLen: number, source: string): void {
  const sorted = [...tensors].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let at = 0;
  let previous: HeaderTensor | undefined;
  for (const t of sorted) {
    if (t.begin < at)
      throw new SafetensorsError(
        `${source}: tensors "${previous!.name}" [${previous!.begin}, ${previous!.end}] and "${t.name}" [${t.begin}, ${t.end}] overlap; ${CORRUPT}`,
      );
    if (t.begin > at) throw new SafetensorsError(`${source}: data bytes [${at}, ${t.begin}) belong to no tensor (before "${t.name}"); ${CORRUPT}`);
    at = t.end;
    previous = t;
  }
  if (at !== dataLen) throw new SafetensorsError(`${source}: the last ${dataLen - at} data bytes belong to no tensor; ${CORRUPT}`);
}

/** Validates a header already parsed from JSON, for a data section of `dataLen` bytes. */
export function parseHeader(header: unknown, dataLen: number, source: string): ParsedHeader {
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    throw new SafetensorsError(
      `${source}: header must be a JSON object mapping tensor names to {dtype, shape, data_offsets}, got ${describe(header)}; ${CORRUPT}`,
    );
  }
  const entries = Object.entries(header);
  const metadata = parseMetadata((header as Record<string, unknown>)["__metadata__"], source);
  const tensors = entries.filter(([name]) => name !== "__metadata__").map(([name, raw]) => parseTensor(name, raw, dataLen, source));
  checkLayout(tensors, dataLen, source);
  return { tensors, metadata };
}

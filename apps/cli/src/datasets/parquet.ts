/**
 * Parquet datasets, read with hyparquet. Rows become plain objects whose values are JSON values,
 * so a nested column (a conversational `prompt` holding a list of {role, content} messages)
 * reaches the formatters as the same structure a JSONL file would give.
 */
import * as zlib from "node:zlib";
import { asyncBufferFromFile, parquetReadObjects, type Compressors } from "hyparquet";
import { DatasetSourceError } from "./errors.js";

type Decompress = (input: Uint8Array, outputLength: number) => Uint8Array;

/**
 * Codecs beyond hyparquet's own (uncompressed, snappy), from node:zlib. ZSTD, the default of
 * polars and of some pyarrow setups, needs Node >= 22.15 (zlib.zstdDecompressSync).
 */
function compressors(): Compressors {
  const zstd = (zlib as { zstdDecompressSync?: (b: Uint8Array) => Uint8Array }).zstdDecompressSync;
  const out: Compressors = {
    GZIP: (input) => zlib.gunzipSync(input),
    BROTLI: (input) => zlib.brotliDecompressSync(input),
  };
  if (zstd !== undefined) out.ZSTD = ((input) => zstd(input)) satisfies Decompress;
  return out;
}

/**
 * A value from hyparquet as a JSON value: 64-bit integers (BigInt) become numbers when
 * Number.isSafeInteger holds and decimal strings otherwise (JSON numbers cannot hold them
 * exactly); dates become ISO 8601 strings; binary becomes base64; typed arrays become arrays.
 */
export function toJsonValue(v: unknown): unknown {
  if (v === undefined || v === null) return null;
  if (typeof v === "bigint") {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : v.toString();
  }
  if (typeof v !== "object") return v;
  if (v instanceof Date) return v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (Array.isArray(v)) return v.map(toJsonValue);
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number | bigint>, toJsonValue);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = toJsonValue(x);
  return out;
}

/** The rows of a local Parquet file; `what` names the file's role in messages. */
export async function readParquetRows(file: string, what: string): Promise<Record<string, unknown>[]> {
  let rows: Record<string, unknown>[];
  try {
    rows = await parquetReadObjects({ file: await asyncBufferFromFile(file), compressors: compressors() });
  } catch (err) {
    const message = (err as Error).message;
    const codec = /unsupported compression codec: (\w+)/.exec(message)?.[1];
    const hint =
      codec !== undefined
        ? `; pbrl reads Parquet compressed with snappy, gzip, brotli${"zstdDecompressSync" in zlib ? ", zstd" : " (zstd from Node 22.15)"} or none: re-save it, e.g. pyarrow.parquet.write_table(table, path, compression="snappy")`
        : "";
    throw new DatasetSourceError(`${what} ${file} is not a readable Parquet file: ${message}${hint}`);
  }
  return rows.map((row) => toJsonValue(row) as Record<string, unknown>);
}

/**
 * Parquet datasets, read with hyparquet. Rows become plain objects whose values are JSON values,
 * so a nested column (a conversational `prompt` holding a list of {role, content} messages)
 * reaches the formatters as the same structure a JSONL file would give.
 */
import { promises as fs } from "node:fs";
import * as zlib from "node:zlib";
import { asyncBufferFromFile, parquetReadObjects, type Compressors } from "hyparquet";
import { DatasetError } from "./errors.js";

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
  // Stryker disable next-line ConditionalExpression: Stryker runs on Node 22, which has zstd; on Node < 22.15 (npm test on Node 20) the zstd test kills it
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

const MAGIC = "PAR1";
// Stryker disable next-line StringLiteral: said on Node < 22.15 only, where the codec tests (npm test on Node 20) check it; Stryker runs on Node 22, which has zstd
const NO_ZSTD = " (zstd from Node 22.15)";

/**
 * Why `file` cannot be a Parquet file, from its frame alone, or undefined: it must begin and end
 * with "PAR1", with its metadata's length (4 bytes, little-endian) just before the final "PAR1".
 * hyparquet would read past the end of such a file and say only "Offset is outside the bounds of the DataView".
 */
async function notParquet(file: string): Promise<string | undefined> {
  const handle = await fs.open(file, "r");
  // Stryker disable next-line ArrowFunction: an unclosed handle only holds a descriptor until garbage collection; no result or message changes
  return frameProblem(handle).finally(() => handle.close());
}

/** notParquet on an open file. */
async function frameProblem(handle: fs.FileHandle): Promise<string | undefined> {
  const size = (await handle.stat()).size;
  if (size === 0) return "it is empty (0 bytes)";
  const frame = `it does not begin and end with "${MAGIC}", as every Parquet file does (${size} bytes; is it another format, or cut short?)`;
  if (size < 12) return frame;
  const head = Buffer.alloc(4);
  const tail = Buffer.alloc(8);
  await handle.read(head, 0, 4, 0);
  await handle.read(tail, 0, 8, size - 8);
  if (head.toString("latin1") !== MAGIC || tail.subarray(4).toString("latin1") !== MAGIC) return frame;
  const metadata = tail.readUInt32LE(0);
  if (metadata > size - 12) return `its footer says its metadata takes ${metadata} bytes, more than the file holds (${size} bytes); it is damaged or cut short`;
  return undefined;
}

/** The rows of a local Parquet file; `what` names the file's role in messages. */
export async function readParquetRows(file: string, what: string): Promise<Record<string, unknown>[]> {
  const frame = await notParquet(file);
  if (frame !== undefined) throw new DatasetError("invalid_file", `${what} ${file} is not a readable Parquet file: ${frame}`);
  let rows: Record<string, unknown>[];
  try {
    rows = await parquetReadObjects({ file: await asyncBufferFromFile(file), compressors: compressors() });
  } catch (err) {
    const message = (err as Error).message;
    let why: string;
    if (/unsupported compression codec: \w/.test(message))
      why = `${message}; pbrl reads Parquet compressed with snappy, gzip, brotli${"zstdDecompressSync" in zlib ? ", zstd" : NO_ZSTD} or none: re-save it, e.g. pyarrow.parquet.write_table(table, path, compression="snappy")`;
    // hyparquet follows offsets and lengths read from the file: damaged ones point past its end (a RangeError from DataView).
    else if (err instanceof RangeError) why = "an offset or length inside it points past its end; it is damaged or cut short";
    else why = `its contents could not be decoded (${message}); it is damaged, or not written by a Parquet writer`;
    throw new DatasetError("invalid_file", `${what} ${file} is not a readable Parquet file: ${why}`);
  }
  return rows.map((row) => toJsonValue(row) as Record<string, unknown>);
}

/**
 * The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * header length, a JSON header mapping names to {dtype, shape, data_offsets}, then raw
 * little-endian bytes. Floating types load as float32, integer types as int32 (range checked).
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "./atomic-write.js";
import { bf16BitsToFloat32, f16BitsToFloat32, float32ToBf16Bits, float32ToF16Bits } from "./half.js";
import { SafetensorsError } from "./safetensors-error.js";
import { DTYPE_BYTES, parseHeader, type SafetensorsDtype } from "./safetensors-header.js";

export type { SafetensorsDtype };
/** The dtypes pbrl writes. Floats are stored as F32, F16 or BF16; integers as I32 or I64. */
export type SafetensorsWriteDtype = "F32" | "F16" | "BF16" | "I32" | "I64";

const BYTES = DTYPE_BYTES;
const FLOAT_DTYPES = new Set<SafetensorsDtype>(["F64", "F32", "F16", "BF16"]);

/** A tensor in host memory, in the row-major layout safetensors and PyTorch use. */
export type HostTensor = { dtype: "float32"; shape: number[]; data: Float32Array } | { dtype: "int32"; shape: number[]; data: Int32Array };

export interface LoadedTensor {
  tensor: HostTensor;
  /** How the tensor was stored on disk; saving with the same dtype reproduces the bytes. */
  storedAs: SafetensorsDtype;
}

export interface SafetensorsFile {
  tensors: Map<string, LoadedTensor>;
  metadata: Record<string, string>;
}

export { SafetensorsError };

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function decode(dtype: SafetensorsDtype, bytes: Uint8Array, n: number, where: string): HostTensor["data"] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (FLOAT_DTYPES.has(dtype)) {
    const out = new Float32Array(n);
    switch (dtype) {
      case "F32":
        // The platforms Node runs on are little-endian, as safetensors is: a byte copy suffices.
        new Uint8Array(out.buffer).set(bytes);
        break;
      case "F64":
        for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
        break;
      case "F16":
        for (let i = 0; i < n; i++) out[i] = f16BitsToFloat32(view.getUint16(i * 2, true));
        break;
      case "BF16":
        for (let i = 0; i < n; i++) out[i] = bf16BitsToFloat32(view.getUint16(i * 2, true));
        break;
    }
    return out;
  }
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let v: number;
    switch (dtype) {
      case "I64": {
        const big = view.getBigInt64(i * 8, true);
        if (big > 2147483647n || big < -2147483648n) throw new SafetensorsError(`${where}: I64 value ${big} does not fit in int32`);
        v = Number(big);
        break;
      }
      case "I32":
        v = view.getInt32(i * 4, true);
        break;
      case "I16":
        v = view.getInt16(i * 2, true);
        break;
      case "I8":
        v = view.getInt8(i);
        break;
      default: // U8, BOOL
        v = view.getUint8(i);
    }
    out[i] = v;
  }
  return out;
}

/** Parses safetensors bytes. `source` names the file in error messages. */
export function parseSafetensors(buf: Uint8Array, source = "<buffer>"): SafetensorsFile {
  if (buf.byteLength < 8) throw new SafetensorsError(`${source}: file too short to be safetensors (${buf.byteLength} bytes)`);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const headerLen = view.getBigUint64(0, true);
  if (headerLen > BigInt(buf.byteLength - 8)) {
    throw new SafetensorsError(
      `${source}: header length ${headerLen} exceeds the file size (${buf.byteLength} bytes); the file is truncated or not safetensors`,
    );
  }
  const dataStart = 8 + Number(headerLen);
  let text: string;
  try {
    // fatal: bytes that are not UTF-8 are corruption, not text to repair with U+FFFD.
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(8, dataStart));
  } catch {
    throw new SafetensorsError(`${source}: header is not valid UTF-8; the file is corrupt or not safetensors`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new SafetensorsError(`${source}: header is not valid JSON (${(err as Error).message}); the file is corrupt or not safetensors`);
  }
  const header = parseHeader(json, buf.byteLength - dataStart, source);
  const tensors = new Map<string, LoadedTensor>();
  for (const { name, dtype, shape, begin, end } of header.tensors) {
    const data = decode(dtype, buf.subarray(dataStart + begin, dataStart + end), numel(shape), `${source}: tensor "${name}"`);
    const tensor: HostTensor = data instanceof Float32Array ? { dtype: "float32", shape, data } : { dtype: "int32", shape, data };
    tensors.set(name, { tensor, storedAs: dtype });
  }
  return { tensors, metadata: header.metadata };
}

export async function readSafetensors(file: string): Promise<SafetensorsFile> {
  let buf: Buffer;
  try {
    buf = await fs.readFile(file);
  } catch (err) {
    throw new SafetensorsError(`cannot read ${file}: ${(err as Error).message}`);
  }
  return parseSafetensors(buf, file);
}

export interface TensorToWrite {
  tensor: HostTensor;
  dtype: SafetensorsWriteDtype;
}

function encode(t: TensorToWrite, name: string): Uint8Array {
  const { tensor, dtype } = t;
  const n = tensor.data.length;
  if (n !== numel(tensor.shape)) throw new SafetensorsError(`tensor "${name}": ${n} values do not match shape [${tensor.shape}]`);
  const isFloat = dtype === "F32" || dtype === "F16" || dtype === "BF16";
  if (isFloat !== (tensor.dtype === "float32")) throw new SafetensorsError(`tensor "${name}": cannot store ${tensor.dtype} data as ${dtype}`);
  const out = new Uint8Array(n * BYTES[dtype]);
  const view = new DataView(out.buffer);
  const d = tensor.data;
  switch (dtype) {
    case "F32":
      out.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      break;
    case "F16":
      for (let i = 0; i < n; i++) view.setUint16(i * 2, float32ToF16Bits(d[i]!), true);
      break;
    case "BF16":
      for (let i = 0; i < n; i++) view.setUint16(i * 2, float32ToBf16Bits(d[i]!), true);
      break;
    case "I32":
      for (let i = 0; i < n; i++) view.setInt32(i * 4, d[i]!, true);
      break;
    case "I64":
      for (let i = 0; i < n; i++) view.setBigInt64(i * 8, BigInt(d[i]!), true);
      break;
  }
  return out;
}

/** Serialises tensors (in name order) with `{"format": "pt"}` metadata, which transformers requires. */
export function serializeSafetensors(tensors: ReadonlyMap<string, TensorToWrite>, metadata: Record<string, string> = {}): Uint8Array {
  const names = [...tensors.keys()].sort();
  const chunks: Uint8Array[] = [];
  const header: Record<string, unknown> = { __metadata__: { format: "pt", ...metadata } };
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const bytes = encode(t, name);
    header[name] = { dtype: t.dtype, shape: t.tensor.shape, data_offsets: [offset, offset + bytes.byteLength] };
    chunks.push(bytes);
    offset += bytes.byteLength;
  }
  let headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(headerBytes.byteLength / 8) * 8; // 8-byte alignment, padded with spaces as in the reference implementation
  if (padded !== headerBytes.byteLength) {
    const p = new Uint8Array(padded).fill(0x20);
    p.set(headerBytes);
    headerBytes = p;
  }
  const out = new Uint8Array(8 + headerBytes.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.byteLength), true);
  out.set(headerBytes, 8);
  let pos = 8 + headerBytes.byteLength;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.byteLength;
  }
  return out;
}

export async function writeSafetensors(file: string, tensors: ReadonlyMap<string, TensorToWrite>, metadata: Record<string, string> = {}): Promise<void> {
  await writeFileAtomic(file, serializeSafetensors(tensors, metadata));
}

export const SAFETENSORS_SINGLE = "model.safetensors";
export const SAFETENSORS_INDEX = "model.safetensors.index.json";

/**
 * Reads the weights of a Hugging Face checkpoint folder: `model.safetensors`, or the shards
 * listed in `model.safetensors.index.json`.
 */
export async function readSafetensorsCheckpoint(dir: string): Promise<SafetensorsFile> {
  const indexPath = path.join(dir, SAFETENSORS_INDEX);
  let indexText: string | undefined;
  try {
    indexText = await fs.readFile(indexPath, "utf8");
  } catch {
    indexText = undefined;
  }
  if (indexText === undefined) {
    const single = path.join(dir, SAFETENSORS_SINGLE);
    try {
      await fs.access(single);
    } catch {
      throw new SafetensorsError(
        `${dir} has neither ${SAFETENSORS_SINGLE} nor ${SAFETENSORS_INDEX}; pbrl reads safetensors checkpoints only (convert .bin weights with transformers' save_pretrained(safe_serialization=True))`,
      );
    }
    return readSafetensors(single);
  }
  const shards = parseShardIndex(indexText, dir, indexPath);
  const tensors = new Map<string, LoadedTensor>();
  const shardOf = new Map<string, string>();
  const metadata: Record<string, string> = {};
  for (const shard of [...new Set(shards.values())].sort()) {
    const part = await readSafetensors(path.join(dir, shard));
    Object.assign(metadata, part.metadata);
    for (const [name, t] of part.tensors) {
      const other = shardOf.get(name);
      // Which copy transformers would use depends on load order: neither is safe to pick.
      if (other !== undefined)
        throw new SafetensorsError(`${indexPath}: tensor "${name}" is stored in both ${other} and ${shard}; the checkpoint is inconsistent, save it again`);
      shardOf.set(name, shard);
      tensors.set(name, t);
    }
  }
  const missing = [...shards.keys()].filter((n) => !tensors.has(n));
  if (missing.length > 0)
    throw new SafetensorsError(`${indexPath} lists tensors missing from their shards: ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ", …" : ""}`);
  return { tensors, metadata };
}

/**
 * The index's weight_map, tensor name → shard file. Shard names must stay inside the checkpoint
 * folder: an index is downloaded data, and "../" in it must not make pbrl read files elsewhere.
 */
function parseShardIndex(text: string, dir: string, indexPath: string): Map<string, string> {
  let index: unknown;
  try {
    index = JSON.parse(text);
  } catch (err) {
    throw new SafetensorsError(`${indexPath} is not valid JSON: ${(err as Error).message}`);
  }
  const weightMap = typeof index === "object" && index !== null ? (index as { weight_map?: unknown }).weight_map : undefined;
  if (typeof weightMap !== "object" || weightMap === null || Array.isArray(weightMap)) {
    throw new SafetensorsError(`${indexPath} has no weight_map object (tensor name → shard file); the index is corrupt, download or save the checkpoint again`);
  }
  const shards = new Map<string, string>();
  for (const [name, shard] of Object.entries(weightMap)) {
    if (typeof shard !== "string" || shard.length === 0)
      throw new SafetensorsError(`${indexPath}: weight_map "${name}" must name a shard file, got ${JSON.stringify(shard)}`);
    const rel = path.relative(dir, path.resolve(dir, shard));
    if (rel === "" || rel === ".." || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
      throw new SafetensorsError(
        `${indexPath}: weight_map "${name}" names ${JSON.stringify(shard)}, which is not a file inside ${dir}; shard files must lie in the checkpoint folder`,
      );
    }
    shards.set(name, shard);
  }
  return shards;
}

export interface WriteCheckpointOptions {
  /** Split into shards of at most this many bytes (as transformers' max_shard_size); default: one file. */
  maxShardBytes?: number;
  metadata?: Record<string, string>;
}

/**
 * Writes checkpoint weights into `dir`: one `model.safetensors`, or numbered shards plus
 * `model.safetensors.index.json` when `maxShardBytes` is exceeded. Returns the files written.
 */
export async function writeSafetensorsCheckpoint(
  dir: string,
  tensors: ReadonlyMap<string, TensorToWrite>,
  options: WriteCheckpointOptions = {},
): Promise<string[]> {
  const limit = options.maxShardBytes ?? Infinity;
  const shards: Map<string, TensorToWrite>[] = [new Map()];
  let size = 0;
  let total = 0;
  for (const name of [...tensors.keys()].sort()) {
    const t = tensors.get(name)!;
    const bytes = t.tensor.data.length * BYTES[t.dtype];
    total += bytes;
    if (size > 0 && size + bytes > limit) {
      shards.push(new Map());
      size = 0;
    }
    shards[shards.length - 1]!.set(name, t);
    size += bytes;
  }
  if (shards.length === 1) {
    await writeSafetensors(path.join(dir, SAFETENSORS_SINGLE), tensors, options.metadata);
    return [SAFETENSORS_SINGLE];
  }
  const count = String(shards.length).padStart(5, "0");
  const files: string[] = [];
  const weightMap: Record<string, string> = {};
  for (const [i, shard] of shards.entries()) {
    const file = `model-${String(i + 1).padStart(5, "0")}-of-${count}.safetensors`;
    await writeSafetensors(path.join(dir, file), shard, options.metadata);
    for (const name of shard.keys()) weightMap[name] = file;
    files.push(file);
  }
  const index = { metadata: { total_size: total }, weight_map: weightMap };
  await writeFileAtomic(path.join(dir, SAFETENSORS_INDEX), JSON.stringify(index, null, 2) + "\n");
  return [...files, SAFETENSORS_INDEX];
}

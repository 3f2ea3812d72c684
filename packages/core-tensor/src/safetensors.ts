/**
 * The safetensors format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * header length, a JSON header mapping names to {dtype, shape, data_offsets}, then raw
 * little-endian bytes. Floating types load as float32, integer types as int32 (range checked).
 */
import { closeSync, fstatSync, openSync, promises as fs, readSync } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic, writeFileAtomicStream } from "./atomic-write.js";
import { bf16BitsToFloat32, f16BitsToFloat32, float32ToBf16Bits, float32ToF16Bits } from "./half.js";
import { SafetensorsError } from "./safetensors-error.js";
import { LazyHostTensors } from "./lazy-host-tensors.js";
import { DTYPE_BYTES, parseHeader, type HeaderTensor, type ParsedHeader, type SafetensorsDtype } from "./safetensors-header.js";

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

/**
 * The header of a safetensors file of `size` bytes, read through `bytes(begin, end)` (the file in
 * memory, or read from disk piece by piece), with where its data starts.
 */
function parseFileHeader(bytes: (begin: number, end: number) => Uint8Array, size: number, source: string): { header: ParsedHeader; dataStart: number } {
  if (size < 8) throw new SafetensorsError(`${source}: file too short to be safetensors (${size} bytes)`);
  const first = bytes(0, 8);
  const headerLen = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
  if (headerLen > BigInt(size - 8)) {
    throw new SafetensorsError(`${source}: header length ${headerLen} exceeds the file size (${size} bytes); the file is truncated or not safetensors`);
  }
  const dataStart = 8 + Number(headerLen);
  let text: string;
  try {
    // fatal: bytes that are not UTF-8 are corruption, not text to repair with U+FFFD.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes(8, dataStart));
  } catch {
    throw new SafetensorsError(`${source}: header is not valid UTF-8; the file is corrupt or not safetensors`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new SafetensorsError(`${source}: header is not valid JSON (${(err as Error).message}); the file is corrupt or not safetensors`);
  }
  return { header: parseHeader(json, size - dataStart, source), dataStart };
}

function hostTensor(shape: number[], data: HostTensor["data"]): HostTensor {
  return data instanceof Float32Array ? { dtype: "float32", shape, data } : { dtype: "int32", shape, data };
}

/** Parses safetensors bytes. `source` names the file in error messages. */
export function parseSafetensors(buf: Uint8Array, source = "<buffer>"): SafetensorsFile {
  const { header, dataStart } = parseFileHeader((b, e) => buf.subarray(b, e), buf.byteLength, source);
  const tensors = new Map<string, LoadedTensor>();
  for (const { name, dtype, shape, begin, end } of header.tensors) {
    const data = decode(dtype, buf.subarray(dataStart + begin, dataStart + end), numel(shape), `${source}: tensor "${name}"`);
    tensors.set(name, { tensor: hostTensor(shape, data), storedAs: dtype });
  }
  return { tensors, metadata: header.metadata };
}

/** Fills `into` from `fd` at `position`, or fails naming the file. */
function readFully(fd: number, into: Uint8Array, position: number, file: string): Uint8Array {
  let done = 0;
  while (done < into.byteLength) {
    const n = readSync(fd, into, done, into.byteLength - done, position + done);
    if (n === 0) throw new SafetensorsError(`${file}: the file ended while reading it (it changed or was truncated since its header was read)`);
    done += n;
  }
  return into;
}

/** An open safetensors file whose tensors are read from disk one at a time. */
class SafetensorsOnDisk {
  readonly tensors: ReadonlyMap<string, HeaderTensor>;
  readonly metadata: Record<string, string>;
  private readonly dataStart: number;

  private constructor(
    readonly file: string,
    private readonly fd: number,
  ) {
    const parsed = parseFileHeader((b, e) => readFully(fd, new Uint8Array(e - b), b, file), fstatSync(fd).size, file);
    this.tensors = new Map(parsed.header.tensors.map((t) => [t.name, t]));
    this.metadata = parsed.header.metadata;
    this.dataStart = parsed.dataStart;
  }

  static open(file: string): SafetensorsOnDisk {
    let fd: number;
    try {
      fd = openSync(file, "r");
    } catch (err) {
      throw new SafetensorsError(`cannot read ${file}: ${(err as Error).message}`);
    }
    try {
      return new SafetensorsOnDisk(file, fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  read(name: string): HostTensor {
    const { dtype, shape, begin, end } = this.tensors.get(name)!;
    const at = this.dataStart + begin;
    if (dtype === "F32") {
      // Straight into the tensor's own buffer: no second copy.
      const data = new Float32Array(numel(shape));
      readFully(this.fd, new Uint8Array(data.buffer), at, this.file);
      return hostTensor(shape, data);
    }
    return hostTensor(shape, decode(dtype, readFully(this.fd, new Uint8Array(end - begin), at, this.file), numel(shape), `${this.file}: tensor "${name}"`));
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * A checkpoint's weights (one file or shards) read from disk as they are asked for, so that a
 * model is built from them without a host copy of all its weights; close it when done.
 */
export interface SafetensorsCheckpoint {
  /** Every tensor, read anew each time it is asked for. */
  tensors: LazyHostTensors;
  /** How each tensor is stored on disk. */
  storedAs: ReadonlyMap<string, SafetensorsDtype>;
  metadata: Record<string, string>;
  close(): void;
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

/**
 * Host data read only when its bytes are written: a file of many tensors (a model's weights, its
 * AdamW moments) then holds one tensor in host memory at a time, never a copy of them all.
 */
export interface DeferredHostTensor {
  dtype: HostTensor["dtype"];
  shape: number[];
  read: () => HostTensor["data"];
}

export interface TensorToWrite {
  tensor: HostTensor | DeferredHostTensor;
  dtype: SafetensorsWriteDtype;
}

function hostData(t: TensorToWrite["tensor"]): HostTensor["data"] {
  return "read" in t ? t.read() : t.data;
}

/** The bytes of one tensor as `dtype` stores them (F32: a view of the data, no copy). */
function encode(t: TensorToWrite, name: string): Uint8Array {
  const { tensor, dtype } = t;
  const d = hostData(tensor);
  const n = d.length;
  if (n !== numel(tensor.shape)) throw new SafetensorsError(`tensor "${name}": ${n} values do not match shape [${tensor.shape}]`);
  const isFloat = dtype === "F32" || dtype === "F16" || dtype === "BF16";
  if (isFloat !== (tensor.dtype === "float32") || isFloat !== d instanceof Float32Array)
    throw new SafetensorsError(`tensor "${name}": cannot store ${tensor.dtype} data as ${dtype}`);
  // The platforms Node runs on are little-endian, as safetensors is.
  if (dtype === "F32") return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  const out = new Uint8Array(n * BYTES[dtype]);
  const view = new DataView(out.buffer);
  switch (dtype) {
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

/**
 * The file's first bytes (length and JSON header, `{"format": "pt"}` metadata, which transformers
 * requires) and the order its tensors follow (by name), from the shapes alone.
 */
function layout(tensors: ReadonlyMap<string, TensorToWrite>, metadata: Record<string, string>): { head: Uint8Array; names: string[]; dataBytes: number } {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = { __metadata__: { format: "pt", ...metadata } };
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const bytes = numel(t.tensor.shape) * BYTES[t.dtype];
    header[name] = { dtype: t.dtype, shape: t.tensor.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  // 8-byte alignment, padded with spaces as in the reference implementation.
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const head = new Uint8Array(8 + padded).fill(0x20);
  new DataView(head.buffer).setBigUint64(0, BigInt(padded), true);
  head.set(json, 8);
  return { head, names, dataBytes: offset };
}

/** Serialises tensors (in name order) into one buffer; {@link writeSafetensors} writes a file without one. */
export function serializeSafetensors(tensors: ReadonlyMap<string, TensorToWrite>, metadata: Record<string, string> = {}): Uint8Array {
  const { head, names, dataBytes } = layout(tensors, metadata);
  const out = new Uint8Array(head.byteLength + dataBytes);
  out.set(head);
  let pos = head.byteLength;
  for (const name of names) {
    const bytes = encode(tensors.get(name)!, name);
    out.set(bytes, pos);
    pos += bytes.byteLength;
  }
  return out;
}

/** Writes a safetensors file atomically, one tensor at a time (deferred tensors are read as they are written). */
export async function writeSafetensors(file: string, tensors: ReadonlyMap<string, TensorToWrite>, metadata: Record<string, string> = {}): Promise<void> {
  const { head, names } = layout(tensors, metadata);
  await writeFileAtomicStream(file, async (write) => {
    await write(head);
    for (const name of names) await write(encode(tensors.get(name)!, name));
  });
}

export const SAFETENSORS_SINGLE = "model.safetensors";
export const SAFETENSORS_INDEX = "model.safetensors.index.json";

/**
 * Reads the weights of a Hugging Face checkpoint folder: `model.safetensors`, or the shards
 * listed in `model.safetensors.index.json`.
 */
export async function readSafetensorsCheckpoint(dir: string): Promise<SafetensorsFile> {
  const checkpoint = await openSafetensorsCheckpoint(dir);
  try {
    const tensors = new Map<string, LoadedTensor>();
    for (const [name, tensor] of checkpoint.tensors) tensors.set(name, { tensor, storedAs: checkpoint.storedAs.get(name)! });
    return { tensors, metadata: checkpoint.metadata };
  } finally {
    checkpoint.close();
  }
}

/** {@link readSafetensorsCheckpoint} that reads each tensor only when it is asked for (see {@link SafetensorsCheckpoint}). */
export async function openSafetensorsCheckpoint(dir: string): Promise<SafetensorsCheckpoint> {
  const indexPath = path.join(dir, SAFETENSORS_INDEX);
  let indexText: string | undefined;
  try {
    indexText = await fs.readFile(indexPath, "utf8");
  } catch {
    indexText = undefined;
  }
  const files: SafetensorsOnDisk[] = [];
  const fileOf = new Map<string, SafetensorsOnDisk>();
  const close = () => {
    for (const f of files) f.close();
  };
  try {
    if (indexText === undefined) {
      const single = path.join(dir, SAFETENSORS_SINGLE);
      try {
        await fs.access(single);
      } catch {
        throw new SafetensorsError(
          `${dir} has neither ${SAFETENSORS_SINGLE} nor ${SAFETENSORS_INDEX}; pbrl reads safetensors checkpoints only (convert .bin weights with transformers' save_pretrained(safe_serialization=True))`,
        );
      }
      files.push(SafetensorsOnDisk.open(single));
      for (const name of files[0]!.tensors.keys()) fileOf.set(name, files[0]!);
    } else {
      const shards = parseShardIndex(indexText, dir, indexPath);
      for (const shard of [...new Set(shards.values())].sort()) {
        const part = SafetensorsOnDisk.open(path.join(dir, shard));
        files.push(part);
        for (const name of part.tensors.keys()) {
          const other = fileOf.get(name);
          // Which copy transformers would use depends on load order: neither is safe to pick.
          if (other !== undefined)
            throw new SafetensorsError(
              `${indexPath}: tensor "${name}" is stored in both ${path.relative(dir, other.file)} and ${shard}; the checkpoint is inconsistent, save it again`,
            );
          fileOf.set(name, part);
        }
      }
      const missing = [...shards.keys()].filter((n) => !fileOf.has(n));
      if (missing.length > 0)
        throw new SafetensorsError(`${indexPath} lists tensors missing from their shards: ${missing.slice(0, 5).join(", ")}${missing.length > 5 ? ", …" : ""}`);
    }
  } catch (err) {
    close();
    throw err;
  }
  return {
    tensors: new LazyHostTensors(new Set(fileOf.keys()), (name) => fileOf.get(name)!.read(name)),
    storedAs: new Map([...fileOf].map(([name, f]) => [name, f.tensors.get(name)!.dtype])),
    metadata: Object.assign({}, ...files.map((f) => f.metadata)) as Record<string, string>,
    close,
  };
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
    const bytes = numel(t.tensor.shape) * BYTES[t.dtype];
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

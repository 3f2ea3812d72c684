// The few protobuf wire-format pieces pbrl's TensorBoard event files need: enough to encode
// tensorflow.Event and decode it back in tests, without a protobuf dependency. Encoders write
// exactly what they are given; callers (event.ts) decide which proto3 defaults to leave out.

/** Wire types (https://protobuf.dev/programming-guides/encoding/): varint, 64-bit, length-delimited, 32-bit. */
export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

const utf8 = new TextEncoder();

/**
 * Base-128 varint of an unsigned or int64 value: negatives are written as their 64-bit two's
 * complement (10 bytes), as protobuf does for int64. Numbers must be safe integers.
 */
export function varint(value: number | bigint): Uint8Array {
  if (typeof value === "number" && !Number.isSafeInteger(value)) throw new RangeError(`varint: ${value} is not a safe integer`);
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Uint8Array.from(out);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function key(field: number, wire: number): Uint8Array {
  return varint(field * 8 + wire);
}

export function fieldVarint(field: number, value: number | bigint): Uint8Array {
  return concat([key(field, WIRE_VARINT), varint(value)]);
}

export function fieldDouble(field: number, value: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, value, true);
  return concat([key(field, WIRE_I64), b]);
}

/** A `float` field: the value is rounded to float32, as TensorBoard stores simple_value. */
export function fieldFloat(field: number, value: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, value, true);
  return concat([key(field, WIRE_I32), b]);
}

export function fieldBytes(field: number, value: Uint8Array): Uint8Array {
  return concat([key(field, WIRE_LEN), varint(value.length), value]);
}

export function fieldString(field: number, value: string): Uint8Array {
  return fieldBytes(field, utf8.encode(value));
}

/** An embedded message: its already-encoded fields, length-delimited. */
export function fieldMessage(field: number, parts: readonly Uint8Array[]): Uint8Array {
  return fieldBytes(field, concat(parts));
}

/** A packed `repeated double` (proto3's default encoding for repeated scalars). */
export function fieldPackedDoubles(field: number, values: readonly number[]): Uint8Array {
  const b = new Uint8Array(values.length * 8);
  const view = new DataView(b.buffer);
  values.forEach((v, i) => view.setFloat64(i * 8, v, true));
  return fieldBytes(field, b);
}

/** One decoded field: a varint's value, or the raw bytes of a fixed-width or length-delimited field. */
export type ProtoField =
  { field: number; wire: typeof WIRE_VARINT; value: bigint } | { field: number; wire: typeof WIRE_I64 | typeof WIRE_I32 | typeof WIRE_LEN; bytes: Uint8Array };

function readVarint(buf: Uint8Array, at: number): [bigint, number] {
  let v = 0n;
  for (let shift = 0n, i = at; i < buf.length && shift < 70n; shift += 7n, i++) {
    const b = buf[i]!;
    v |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [BigInt.asUintN(64, v), i + 1];
  }
  throw new Error(`protobuf: bad or truncated varint at byte ${at}`);
}

/** Splits one message into its fields, in order; throws on truncation and on (unused) group wire types. */
export function decodeFields(buf: Uint8Array): ProtoField[] {
  const fields: ProtoField[] = [];
  let at = 0;
  while (at < buf.length) {
    const [k, next] = readVarint(buf, at);
    at = next;
    const field = Number(k >> 3n);
    const wire = Number(k & 7n);
    if (wire === WIRE_VARINT) {
      const [value, after] = readVarint(buf, at);
      fields.push({ field, wire, value });
      at = after;
      continue;
    }
    let len: number;
    if (wire === WIRE_I64) len = 8;
    else if (wire === WIRE_I32) len = 4;
    else if (wire === WIRE_LEN) {
      const [n, after] = readVarint(buf, at);
      len = Number(n);
      at = after;
    } else throw new Error(`protobuf: unsupported wire type ${wire} (field ${field})`);
    if (at + len > buf.length) throw new Error(`protobuf: field ${field} runs past the end of the message`);
    fields.push({ field, wire, bytes: buf.subarray(at, at + len) });
    at += len;
  }
  return fields;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

export function readDouble(b: Uint8Array): number {
  return view(b).getFloat64(0, true);
}

export function readFloat(b: Uint8Array): number {
  return view(b).getFloat32(0, true);
}

/** A repeated double, packed (one length-delimited field) or not (one 64-bit field per value). */
export function readDoubles(f: ProtoField): number[] {
  if (f.wire === WIRE_I64) return [readDouble(f.bytes)];
  if (f.wire !== WIRE_LEN || f.bytes.length % 8 !== 0) throw new Error(`protobuf: field ${f.field} is not a repeated double`);
  const out: number[] = [];
  for (let i = 0; i < f.bytes.length; i += 8) out.push(readDouble(f.bytes.subarray(i, i + 8)));
  return out;
}

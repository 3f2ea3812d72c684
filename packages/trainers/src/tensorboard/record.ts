// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// (tensorflow/core/lib/io/record_writer.cc). Readers stop at an incomplete last record, so a
// process killed mid-write loses only that record.
import { maskedCrc32c } from "./crc32c.js";

export function frameRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(data.length + 16);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

/**
 * The records in `buf`, both CRCs checked (a mismatch throws: the file is corrupt, not merely
 * cut short). `truncatedBytes` counts the bytes of an incomplete record at the end (0 if none).
 */
export function parseRecords(buf: Uint8Array): { records: Uint8Array[]; truncatedBytes: number } {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const records: Uint8Array[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < 12) break;
    if (view.getUint32(at + 8, true) !== maskedCrc32c(buf.subarray(at, at + 8))) throw new Error(`TFRecord at byte ${at}: length CRC mismatch`);
    const len = view.getBigUint64(at, true);
    if (len > BigInt(buf.length - at - 16)) break;
    const start = at + 12;
    const end = start + Number(len);
    const data = buf.subarray(start, end);
    if (view.getUint32(end, true) !== maskedCrc32c(data)) throw new Error(`TFRecord at byte ${at}: data CRC mismatch`);
    records.push(data);
    at = end + 4;
  }
  return { records, truncatedBytes: buf.length - at };
}

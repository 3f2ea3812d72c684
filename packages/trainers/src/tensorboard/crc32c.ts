// CRC-32C (Castagnoli), the checksum TFRecord framing uses, and TensorFlow's "masked" form of it.
// Hand-written (a 256-entry table) so pbrl's TensorBoard output needs no npm dependency.

/** The reflected Castagnoli polynomial 0x1EDC6F41. */
const POLY = 0x82f63b78;

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C of `data`, as an unsigned 32-bit number: crc32c("123456789") = 0xE3069283. */
export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = (TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8)) >>> 0;
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * TensorFlow's masked CRC (tsl/lib/hash/crc32c.h `Mask`): rotate right by 15 and add a constant,
 * so a CRC stored next to the bytes it covers does not checksum to something trivial.
 */
export function maskCrc(crc: number): number {
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

export function maskedCrc32c(data: Uint8Array): number {
  return maskCrc(crc32c(data));
}

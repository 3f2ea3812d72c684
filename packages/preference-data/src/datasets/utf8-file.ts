/**
 * Text files decoded strictly (datasets, and the CLI's run files): bytes that are not UTF-8 are
 * an error naming the file and where, never a silent U+FFFD in the training data.
 */
import { readFileSync } from "node:fs";
import { DatasetError } from "./errors.js";

const strict = new TextDecoder("utf-8", { fatal: true });

/**
 * Byte offset where the first invalid UTF-8 sequence starts (WHATWG rules: no overlong forms, no
 * surrogates, nothing above U+10FFFF, no truncated sequence), or -1 when all of `bytes` is valid.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  // Past the end bytes[i] is undefined, and every comparison with undefined is false.
  const cont = (i: number, lo = 0x80, hi = 0xbf) => bytes[i]! >= lo && bytes[i]! <= hi;
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    let len: number;
    if (b < 0x80) len = 1;
    else if (b >= 0xc2 && b <= 0xdf) len = cont(i + 1) ? 2 : 0;
    else if (b === 0xe0) len = cont(i + 1, 0xa0) && cont(i + 2) ? 3 : 0;
    else if (b === 0xed) len = cont(i + 1, 0x80, 0x9f) && cont(i + 2) ? 3 : 0;
    else if (b >= 0xe1 && b <= 0xef) len = cont(i + 1) && cont(i + 2) ? 3 : 0;
    else if (b === 0xf0) len = cont(i + 1, 0x90) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    else if (b >= 0xf1 && b <= 0xf3) len = cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    else if (b === 0xf4) len = cont(i + 1, 0x80, 0x8f) && cont(i + 2) && cont(i + 3) ? 4 : 0;
    else len = 0;
    if (len === 0) return i;
    i += len;
  }
  return -1;
}

/** Why `bytes` is not UTF-8, for a message: offset, line, the bytes there, and a likely cause. */
export function describeInvalidUtf8(bytes: Uint8Array): string {
  const at = firstInvalidUtf8(bytes);
  let line = 1;
  // Stryker disable next-line EqualityOperator: i <= at also looks at bytes[at], which starts an invalid sequence, so is never 0x0A
  for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) line++;
  const shown = Array.from(bytes.subarray(at, at + 4), (b) => `0x${b.toString(16).toUpperCase().padStart(2, "0")}`).join(" ");
  const utf16 = (bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff);
  const cause = utf16 ? "it looks like UTF-16 (it starts with a UTF-16 byte-order mark)" : "it may be Latin-1/Windows-1252 or binary";
  return `invalid UTF-8 at byte offset ${at} (line ${line}; bytes ${shown}); ${cause}. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)`;
}

/**
 * Reads `file` as UTF-8 text (a leading byte-order mark is dropped). `what` names the file's role
 * in messages ("config file", "train_dataset: file").
 */
export function readUtf8File(file: string, what: string): string {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "file not found" : code === "EISDIR" ? "it is a folder, not a file" : (err as Error).message;
    throw new DatasetError(code === "ENOENT" ? "not_found" : "invalid_file", `cannot read ${what} ${file}: ${why}`);
  }
  try {
    return strict.decode(bytes);
  } catch {
    throw new DatasetError("invalid_file", `${what} ${file} is not valid UTF-8 text: ${describeInvalidUtf8(bytes)}`);
  }
}

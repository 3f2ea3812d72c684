// Files the CLI reads are strict UTF-8: invalid bytes are an error naming the file, the byte
// offset and the line, never U+FFFD in the data.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { firstInvalidUtf8, readUtf8File } from "../src/text-file.js";

const fatal = new TextDecoder("utf-8", { fatal: true });
const valid = (b: Uint8Array) => {
  try {
    fatal.decode(b);
    return true;
  } catch {
    return false;
  }
};

describe("firstInvalidUtf8", () => {
  it.each([
    ["ASCII", [0x61, 0x62], -1],
    ["é, €, 😀", [...new TextEncoder().encode("é€😀")], -1],
    ["Latin-1 é", [0x63, 0x61, 0x66, 0xe9], 3],
    ["lone continuation byte", [0x61, 0x80], 1],
    ["overlong /", [0xc0, 0xaf], 0],
    ["overlong 3-byte", [0x61, 0xe0, 0x80, 0xaf], 1],
    ["UTF-16 surrogate", [0xed, 0xa0, 0x80], 0],
    ["above U+10FFFF", [0xf4, 0x90, 0x80, 0x80], 0],
    ["truncated at the end", [0x61, 0x62, 0xe2, 0x82], 2],
    ["UTF-16LE byte-order mark", [0xff, 0xfe, 0x61, 0x00], 0],
  ])("%s", (_name, bytes, at) => {
    const b = Uint8Array.from(bytes);
    expect(firstInvalidUtf8(b)).toBe(at);
    expect(valid(b)).toBe(at === -1);
  });

  it("agrees with the fatal TextDecoder, and the prefix before the offset is valid", () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) & 0xff;
    for (let n = 0; n < 3000; n++) {
      // Mostly valid text with a few random bytes, so errors land anywhere.
      const text = new TextEncoder().encode("añ€😀b".repeat(1 + (n % 3)));
      const b = Uint8Array.from(text, (x) => (rand() < 8 ? rand() : x));
      const at = firstInvalidUtf8(b);
      expect(at === -1, Array.from(b).join(",")).toBe(valid(b));
      if (at >= 0) expect(valid(b.subarray(0, at))).toBe(true);
    }
  });
});

describe("readUtf8File", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-utf8-"));

  it("names the file, the byte offset, the line and the bytes", () => {
    const file = path.join(dir, "latin1.jsonl");
    writeFileSync(file, Buffer.concat([Buffer.from('{"a": "x"}\n{"a": "caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]));
    expect(() => readUtf8File(file, "train_dataset file")).toThrow(
      new RegExp(
        `^train_dataset file ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid UTF-8 text: invalid UTF-8 at byte offset 21 \\(line 2; bytes 0xE9 0x22 0x7D 0x0A\\)`,
      ),
    );
  });

  it("says UTF-16 when the file starts with its byte-order mark", () => {
    const file = path.join(dir, "utf16.yaml");
    writeFileSync(file, Buffer.from("\ufefftrainer: madpo\n", "utf16le"));
    expect(() => readUtf8File(file, "config file")).toThrow(/byte offset 0 .*looks like UTF-16/);
  });

  it("drops a UTF-8 byte-order mark and reads the rest", () => {
    const file = path.join(dir, "bom.json");
    writeFileSync(file, "\ufeff[1]");
    expect(readUtf8File(file, "config file")).toBe("[1]");
  });
});

// Strict UTF-8 for text data files: firstInvalidUtf8 finds where the first invalid sequence starts
// by the WHATWG rules (no overlong forms, no surrogates, nothing above U+10FFFF, nothing cut short),
// describeInvalidUtf8 says where (byte offset, line, the bytes there) and why, and readUtf8File
// names the file in every error.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { describeInvalidUtf8, firstInvalidUtf8, readUtf8File } from "../src/index.js";

const at = (...bytes: number[]) => firstInvalidUtf8(new Uint8Array(bytes));
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-utf8-"));
const failure = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  return new Error("expected a failure");
};

describe("firstInvalidUtf8", () => {
  it("accepts every sequence at the edges of its range (U+0000..U+10FFFF, less the surrogates)", () => {
    expect(at()).toBe(-1);
    expect(at(0x00, 0x41, 0x7f)).toBe(-1);
    expect(at(0xc2, 0x80)).toBe(-1); // U+0080
    expect(at(0xdf, 0xbf)).toBe(-1); // U+07FF
    expect(at(0xe0, 0xa0, 0x80)).toBe(-1); // U+0800
    expect(at(0xe0, 0xbf, 0xbf)).toBe(-1); // U+0FFF
    expect(at(0xe1, 0x80, 0x80)).toBe(-1); // U+1000
    expect(at(0xec, 0xbf, 0xbf)).toBe(-1); // U+CFFF
    expect(at(0xed, 0x80, 0x80)).toBe(-1); // U+D000
    expect(at(0xed, 0x9f, 0xbf)).toBe(-1); // U+D7FF, the last before the surrogates
    expect(at(0xee, 0x80, 0x80)).toBe(-1); // U+E000
    expect(at(0xef, 0xbf, 0xbf)).toBe(-1); // U+FFFF
    expect(at(0xf0, 0x90, 0x80, 0x80)).toBe(-1); // U+10000
    expect(at(0xf0, 0xbf, 0xbf, 0xbf)).toBe(-1); // U+3FFFF
    expect(at(0xf1, 0x80, 0x80, 0x80)).toBe(-1); // U+40000
    expect(at(0xf3, 0xbf, 0xbf, 0xbf)).toBe(-1); // U+FFFFF
    expect(at(0xf4, 0x80, 0x80, 0x80)).toBe(-1); // U+100000
    expect(at(0xf4, 0x8f, 0xbf, 0xbf)).toBe(-1); // U+10FFFF
  });

  it("finds a stray continuation byte, a byte that never starts a sequence, an overlong form, a surrogate, a code point past U+10FFFF", () => {
    expect(at(0x80)).toBe(0);
    expect(at(0xbf)).toBe(0);
    expect(at(0xc0, 0x80)).toBe(0); // overlong U+0000
    expect(at(0xc1, 0xbf)).toBe(0); // overlong U+007F
    expect(at(0xe0, 0x9f, 0xbf)).toBe(0); // overlong U+07FF
    expect(at(0xed, 0xa0, 0x80)).toBe(0); // U+D800
    expect(at(0xf0, 0x8f, 0xbf, 0xbf)).toBe(0); // overlong U+FFFF
    expect(at(0xf4, 0x90, 0x80, 0x80)).toBe(0); // U+110000
    expect(at(0xf5, 0x80, 0x80, 0x80)).toBe(0);
    expect(at(0xff)).toBe(0);
  });

  it("finds a sequence whose continuation bytes are missing or out of range, at each position", () => {
    for (const lead of [[0xc2], [0xe0, 0xa0], [0xed, 0x80], [0xe1, 0x80], [0xf0, 0x90, 0x80], [0xf1, 0x80, 0x80], [0xf4, 0x80, 0x80]]) {
      for (let k = 1; k <= lead.length; k++) {
        const head = lead.slice(0, k);
        expect(at(...head), `${head.map((b) => b.toString(16))} at the end`).toBe(0);
        expect(at(...head, 0x41), `${head.map((b) => b.toString(16))} then A`).toBe(0);
        expect(at(...head, 0xc0), `${head.map((b) => b.toString(16))} then 0xC0`).toBe(0);
      }
    }
    // the second byte's range of E0, ED, F0 and F4 is narrower than 80..BF: its own bounds, then the usual
    expect(at(0xe1, 0x7f, 0x80)).toBe(0);
    expect(at(0xed, 0xbf, 0xbf)).toBe(0);
    expect(at(0xf4, 0xbf, 0xbf, 0xbf)).toBe(0);
  });

  it("returns the offset where the invalid sequence starts, past valid ones of every length", () => {
    expect(at(0x61, 0x62, 0xe9)).toBe(2);
    expect(at(0xc3, 0xa9, 0xff)).toBe(2); // é
    expect(at(0xe2, 0x82, 0xac, 0xff)).toBe(3); // €
    expect(at(0xed, 0x9f, 0xbf, 0xff)).toBe(3);
    expect(at(0xe0, 0xa0, 0x80, 0xff)).toBe(3);
    expect(at(0xf0, 0x9f, 0x98, 0x80, 0xff)).toBe(4); // 😀
    expect(at(0xf2, 0x80, 0x80, 0x80, 0xff)).toBe(4);
    expect(at(0xf4, 0x8f, 0xbf, 0xbf, 0xff)).toBe(4);
    expect(at(0x61, 0xe2, 0x82, 0x41)).toBe(1); // € cut short before an A
  });
});

describe("describeInvalidUtf8", () => {
  it("names the byte offset, the line (lines before it counted), up to four bytes from there in hex, and Latin-1 as the likely cause", () => {
    const bytes = new Uint8Array([...Buffer.from("a\nbc\nd"), 0xe9, 0x0a, 0x62, 0x63, 0x64]);
    expect(describeInvalidUtf8(bytes)).toBe(
      "invalid UTF-8 at byte offset 6 (line 3; bytes 0xE9 0x0A 0x62 0x63); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)",
    );
    expect(describeInvalidUtf8(new Uint8Array([0x41, 0xfe]))).toBe(
      "invalid UTF-8 at byte offset 1 (line 1; bytes 0xFE); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)",
    );
  });

  it("says UTF-16 when the bytes start with either UTF-16 byte-order mark", () => {
    const utf16 = "it looks like UTF-16 (it starts with a UTF-16 byte-order mark). Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)";
    expect(describeInvalidUtf8(new Uint8Array([0xff, 0xfe, 0x61, 0x00, 0x62]))).toBe(
      `invalid UTF-8 at byte offset 0 (line 1; bytes 0xFF 0xFE 0x61 0x00); ${utf16}`,
    );
    expect(describeInvalidUtf8(new Uint8Array([0xfe, 0xff]))).toBe(`invalid UTF-8 at byte offset 0 (line 1; bytes 0xFE 0xFF); ${utf16}`);
    // one half of a mark is no mark
    for (const bytes of [
      [0xff, 0xff],
      [0xfe, 0xfe],
      [0xff, 0x41],
      [0xfe, 0x41],
    ])
      expect(describeInvalidUtf8(new Uint8Array(bytes))).toContain("it may be Latin-1/Windows-1252 or binary");
  });
});

describe("readUtf8File", () => {
  it("reads UTF-8 text, dropping a leading byte-order mark", () => {
    const file = path.join(tmp(), "t.txt");
    writeFileSync(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("héllo €\n")]));
    expect(readUtf8File(file, "config file")).toBe("héllo €\n");
  });

  it("names the file and its role: not found, a folder, any other read error, bytes that are not UTF-8", () => {
    const dir = tmp();
    const missing = path.join(dir, "missing.txt");
    expect(failure(() => readUtf8File(missing, "config file"))).toMatchObject({
      name: "DatasetError",
      code: "not_found",
      message: `cannot read config file ${missing}: file not found`,
    });
    mkdirSync(path.join(dir, "sub"));
    expect(failure(() => readUtf8File(path.join(dir, "sub"), "train_dataset: README.md"))).toMatchObject({
      name: "DatasetError",
      code: "invalid_file",
      message: `cannot read train_dataset: README.md ${path.join(dir, "sub")}: it is a folder, not a file`,
    });
    // a path through a file: ENOTDIR, whose own message is shown
    const plain = path.join(dir, "plain.txt");
    writeFileSync(plain, "x");
    const through = path.join(plain, "x.txt");
    expect(failure(() => readUtf8File(through, "config file"))).toMatchObject({
      name: "DatasetError",
      code: "invalid_file",
      message: `cannot read config file ${through}: ENOTDIR: not a directory, open '${through}'`,
    });
    const latin1 = path.join(dir, "latin1.txt");
    writeFileSync(latin1, Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    expect(failure(() => readUtf8File(latin1, "config file"))).toMatchObject({
      name: "DatasetError",
      code: "invalid_file",
      message: `config file ${latin1} is not valid UTF-8 text: invalid UTF-8 at byte offset 3 (line 1; bytes 0xE9); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)`,
    });
  });
});

describe("firstInvalidUtf8, lead byte by lead byte", () => {
  it("takes no continuation byte, 0xC0/0xC1 or a byte above U+10FFFF as a lead, however many continuation bytes follow", () => {
    expect(at(0x80, 0x80, 0x80)).toBe(0);
    expect(at(0x41, 0xc0, 0x80, 0x80, 0x80)).toBe(1);
    expect(at(0xf4, 0x90, 0x80, 0x80)).toBe(0); // U+110000
  });

  it("needs every continuation byte of a four-byte sequence from 0xF1 to 0xF3", () => {
    expect(at(0xf1, 0x41, 0x80, 0x80)).toBe(0);
    expect(at(0xf2, 0x80, 0x41, 0x80)).toBe(0);
    expect(at(0xf3, 0x80, 0x80, 0x41)).toBe(0);
  });
});

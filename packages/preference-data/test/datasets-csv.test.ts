// CSV datasets: the RFC 4180 parser (quoted fields with commas, doubled quotes and line breaks;
// CRLF, LF or CR line ends), rows as string-valued objects keyed by the header, and errors that
// name the file and line: a ragged row, a quote left open, text after a closing quote, bytes
// that are not UTF-8.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { csvRows, CsvSyntaxError, loadDataset, parseCsv } from "../src/index.js";

const FIXTURES = path.resolve(import.meta.dirname, "fixtures/datasets");
const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-csv-"));

describe("parseCsv", () => {
  it("splits records and fields, with the line each record starts on", () => {
    expect(parseCsv("a,b\r\n1,2\r\n")).toEqual([
      { line: 1, fields: ["a", "b"] },
      { line: 2, fields: ["1", "2"] },
    ]);
    expect(parseCsv("a,b\n1,2")).toEqual([
      { line: 1, fields: ["a", "b"] },
      { line: 2, fields: ["1", "2"] },
    ]);
    expect(parseCsv("a\r1\r2").map((r) => r.fields)).toEqual([["a"], ["1"], ["2"]]);
  });

  it("keeps commas, doubled quotes and line breaks inside quoted fields, and counts the lines they span", () => {
    const text = 'id,text\n1,"a, b"\n2,"say ""hi"""\n3,"two\r\nlines"\n4,""\n5,x';
    expect(parseCsv(text)).toEqual([
      { line: 1, fields: ["id", "text"] },
      { line: 2, fields: ["1", "a, b"] },
      { line: 3, fields: ["2", 'say "hi"'] },
      { line: 4, fields: ["3", "two\r\nlines"] },
      { line: 6, fields: ["4", ""] },
      { line: 7, fields: ["5", "x"] },
    ]);
  });

  it("keeps empty fields (a trailing comma is one), skips blank lines, keeps a quote inside an unquoted field", () => {
    expect(parseCsv("a,b,c\n,,\n\n\nx,,\n").map((r) => r.fields)).toEqual([
      ["a", "b", "c"],
      ["", "", ""],
      ["x", "", ""],
    ]);
    expect(parseCsv('a\n5" screen\n')[1]!.fields).toEqual(['5" screen']);
    expect(parseCsv("")).toEqual([]);
  });

  it("names the line of a quote that is never closed, and of text after a closing quote", () => {
    const open = () => parseCsv('a,b\n1,2\n3,"never\nclosed\n');
    expect(open).toThrow(CsvSyntaxError);
    expect(open).toThrow(/^line 3: a quoted field starts here and is never closed/);
    expect(() => parseCsv('a,b\n1,"x"y\n')).toThrow(/^line 2: "y" follows the closing quote of a field/);
  });
});

describe("csvRows", () => {
  it("gives one string-valued object per row, keyed by the header (no type guessing)", () => {
    expect(csvRows("id,n,flag\n007,1e3,true\n")).toEqual([{ id: "007", n: "1e3", flag: "true" }]);
  });

  it("names an empty header cell like pandas (the index column of DataFrame.to_csv) and rejects a repeated name", () => {
    expect(csvRows(",topic\n0,cat\n")).toEqual([{ "Unnamed: 0": "0", topic: "cat" }]);
    expect(() => csvRows("a,b,a\n1,2,3\n")).toThrow(/line 1: the header names column "a" twice/);
    expect(() => csvRows("")).toThrow(/the file is empty; its first line must name the columns/);
  });

  it("rejects a ragged row, naming its line and both field counts", () => {
    expect(() => csvRows('id,topic\nt0,cat\nt1,"a\nb",extra\n')).toThrow(
      /^line 3 has 3 fields, the header \(line 1\) has 2; quote a field that contains commas/,
    );
    expect(() => csvRows("id,topic\nt0\n")).toThrow(/^line 2 has 1 field, the header/);
  });
});

describe("parseCsv and csvRows, every line end and every message", () => {
  const thrown = (f: () => unknown): CsvSyntaxError => {
    try {
      f();
    } catch (e) {
      return e as CsvSyntaxError;
    }
    throw new Error("expected a failure");
  };

  it("counts CRLF as one line break, a lone CR or LF as one each, blank lines included", () => {
    expect(parseCsv("a\n\nb\r\rc\r\n\r\nd\n\r\ne")).toEqual([
      { line: 1, fields: ["a"] },
      { line: 3, fields: ["b"] },
      { line: 5, fields: ["c"] },
      { line: 7, fields: ["d"] },
      { line: 9, fields: ["e"] },
    ]);
  });

  it("counts the line breaks inside a quoted field the same way, and ends a record after one at a CR", () => {
    expect(parseCsv('"x\r\ny","p\rq\n\nr"\rnext\r\n"a\r\r\nb"\nlast')).toEqual([
      { line: 1, fields: ["x\r\ny", "p\rq\n\nr"] },
      { line: 6, fields: ["next"] }, // 1 + 1 + 3 breaks in the fields + the CR that ends the record
      { line: 7, fields: ["a\r\r\nb"] },
      { line: 10, fields: ["last"] }, // 7 + 2 breaks in the field + the LF
    ]);
    expect(parseCsv('"a""b""",""""\n')).toEqual([{ line: 1, fields: ['a"b"', '"'] }]);
    // a closing quote at the very end of the text ends the field, the record and the text
    expect(parseCsv('a\n"x"')).toEqual([
      { line: 1, fields: ["a"] },
      { line: 2, fields: ["x"] },
    ]);
  });

  it("says exactly where a quote is never closed or text follows a closing quote, with the fix", () => {
    const open = thrown(() => parseCsv('a,b\n1,2\n3,"never\nclosed\n'));
    expect(open).toBeInstanceOf(CsvSyntaxError);
    expect(open.name).toBe("CsvSyntaxError");
    expect(open.line).toBe(3);
    expect(open.message).toBe('line 3: a quoted field starts here and is never closed; close it with " (and write a quote inside it as "")');
    const after = thrown(() => parseCsv('a,b\n1,"x\ny"z\n'));
    expect(after.line).toBe(3);
    expect(after.message).toBe(
      'line 3: "z" follows the closing quote of a field; a field that holds quotes must be quoted as a whole, with each quote doubled ("say ""hi""")',
    );
    expect(thrown(() => parseCsv('"x" ')).message).toMatch(/^line 1: " " follows the closing quote/);
  });

  it("names every column (the empty ones by index) and maps each field to its column", () => {
    expect(csvRows(",a,\n1,2,3\n")).toEqual([{ "Unnamed: 0": "1", a: "2", "Unnamed: 2": "3" }]);
  });

  it("gives the line and the fix for an empty file, a repeated column and a ragged row", () => {
    for (const text of ["", "\n\r\n"]) {
      const empty = thrown(() => csvRows(text));
      expect(empty.line).toBe(1);
      expect(empty.message).toBe("the file is empty; its first line must name the columns (e.g. id,prompt)");
    }
    const twice = thrown(() => csvRows("\n\nid,a,b,a\n1,2,3,4\n"));
    expect(twice.line).toBe(3);
    expect(twice.message).toBe('line 3: the header names column "a" twice; column names must be unique');
    const ragged = thrown(() => csvRows("\nid,topic\nt0,cat\nt1,dog,extra\n"));
    expect(ragged.line).toBe(4);
    expect(ragged.message).toBe('line 4 has 3 fields, the header (line 2) has 2; quote a field that contains commas or line breaks ("a, b")');
    expect(thrown(() => csvRows("a,b,c\nx\n")).message).toBe(
      'line 2 has 1 field, the header (line 1) has 3; quote a field that contains commas or line breaks ("a, b")',
    );
  });
});

describe("CSV dataset files", () => {
  it("loads the fixture written by Python's csv module (CRLF, quotes, a line break) as the JSONL fixture's items", async () => {
    const csv = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.csv") });
    const jsonl = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.jsonl") });
    expect(csv).toEqual(jsonl);
    expect(csv[1]).toEqual({ id: "t1", topic: 'We drink "tea", then coffee' });
    expect(csv[2]!["topic"]).toBe("A bird\nflies over, far");
  });

  it("names the file and line of malformed CSV", async () => {
    const dir = tmp();
    const file = path.join(dir, "ragged.csv");
    writeFileSync(file, "id,topic\nt0,cat\nt1,dog,extra\n");
    await expect(loadDataset({ key: "eval_dataset", source: file })).rejects.toThrow(
      `eval_dataset: ${file} is not valid CSV: line 3 has 3 fields, the header (line 1) has 2`,
    );
  });

  it("rejects a CSV that is not UTF-8 (Latin-1 here), naming the byte offset and line, never decoding it as U+FFFD", async () => {
    const dir = tmp();
    const file = path.join(dir, "latin1.csv");
    writeFileSync(file, Buffer.concat([Buffer.from("id,topic\nt0,caf"), Buffer.from([0xe9]), Buffer.from("\n")]));
    const err = await loadDataset({ key: "train_dataset", source: file }).then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    expect(err.message).toMatch(
      /^train_dataset file .*latin1\.csv is not valid UTF-8 text: invalid UTF-8 at byte offset 15 \(line 2; bytes 0xE9 0x0A\).*iconv -f LATIN1 -t UTF-8/,
    );
  });
});

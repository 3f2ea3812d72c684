// JSON and JSON-lines data files, the extension deciding the format (in any case), and the
// errors users fix by hand: the file, the line, JSON.parse's own finding, the item that is not an
// object, and for a file of another extension which extensions pbrl knows.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { hasDataExtension, loadDataset } from "../src/index.js";
import { DATA_EXTENSIONS, formatOf, readDataFile } from "../src/datasets/formats.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-formats-"));
const write = (name: string, text: string | Buffer): string => {
  const file = path.join(tmp(), name);
  writeFileSync(file, text);
  return file;
};
const failure = (p: Promise<unknown>): Promise<Error> =>
  p.then(
    () => new Error("expected a failure"),
    (e: unknown) => e as Error,
  );
/** What JSON.parse itself says of `text` (its wording differs between Node versions). */
const parseError = (text: string): string => {
  try {
    JSON.parse(text);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`${text} is valid JSON`);
};

describe("the format of a data file", () => {
  it("is decided by the extension, in any case", () => {
    expect(DATA_EXTENSIONS).toEqual({ ".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet" });
    expect(formatOf("a/b.JSONL")).toBe("json");
    expect(formatOf("b.Json")).toBe("json");
    expect(formatOf("b.CSV")).toBe("csv");
    expect(formatOf("b.PARQUET")).toBe("parquet");
    expect(formatOf("b.txt")).toBeUndefined();
    expect(formatOf("csv")).toBeUndefined();
    expect(hasDataExtension("data/Train.CSV")).toBe(true);
    expect(hasDataExtension("data/train.jsonl.gz")).toBe(false);
  });

  it("an upper-case .CSV is read as CSV, an upper-case .JSON as JSON", async () => {
    expect(await readDataFile(write("ITEMS.CSV", "id,n\na,1\n"), "train_dataset")).toEqual([{ id: "a", n: "1" }]);
    expect(await readDataFile(write("ITEMS.JSON", '[{"id": "a", "n": 1}]'), "train_dataset")).toEqual([{ id: "a", n: 1 }]);
  });
});

describe("JSON and JSON lines", () => {
  it("reads an array of objects, indented and surrounded by blank lines", async () => {
    const file = write("items.json", '\n\n  [\n  {"id": "a"},\n  {"id": "b"}\n]\n\n');
    expect(await readDataFile(file, "train_dataset")).toEqual([{ id: "a" }, { id: "b" }]);
  });

  it("reads one object per line, skipping blank and whitespace-only lines, with CRLF line ends", async () => {
    const file = write("items.jsonl", '{"id": "a"}\r\n\r\n   \r\n\t\n{"id": "b"}\r\n');
    expect(await readDataFile(file, "train_dataset")).toEqual([{ id: "a" }, { id: "b" }]);
  });

  it("names the file and the line (counted from the file's first line) of a line that is not JSON", async () => {
    const file = write("items.jsonl", '\n{"id": "a"}\n\n{"id": b}\n');
    const err = await failure(readDataFile(file, "eval_dataset"));
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    expect(err.message).toBe(`eval_dataset: ${file} line 4 is not valid JSON: ${parseError('{"id": b}')}`);
  });

  it("names the file of an array that is not JSON", async () => {
    const file = write("items.json", '[{"id": "a"},]');
    const err = await failure(readDataFile(file, "train_dataset"));
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    expect(err.message).toBe(`train_dataset: ${file} is not valid JSON: ${parseError('[{"id": "a"},]')}`);
  });

  it("reads a file of another extension as JSON lines, and its errors say which extensions pbrl knows", async () => {
    expect(await readDataFile(write("items.txt", '{"id": "a"}\n'), "train_dataset")).toEqual([{ id: "a" }]);
    const note = "(pbrl reads .jsonl, .json, .csv and .parquet by extension; items.txt was read as JSON lines)";
    const lines = write("items.txt", "id,topic\n");
    expect((await failure(readDataFile(lines, "train_dataset"))).message).toBe(
      `train_dataset: ${lines} line 1 is not valid JSON: ${parseError("id,topic")} ${note}`,
    );
    const array = write("items.txt", "[1,");
    expect((await failure(readDataFile(array, "train_dataset"))).message).toBe(`train_dataset: ${array} is not valid JSON: ${parseError("[1,")} ${note}`);
  });

  it("names the index of an item that is not an object: null, an array, a number, a string", async () => {
    for (const [text, i] of [
      ['{"id": "a"}\nnull\n', 1],
      ['[{"id": "a"}, {"id": "b"}, [1]]', 2],
      ["7\n", 0],
      ['{"id": "a"}\n"text"\n', 1],
    ] as const) {
      const file = write("items.jsonl", text);
      const err = await failure(readDataFile(file, "train_dataset"));
      expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file", message: `train_dataset: item ${i} of ${file} is not a JSON object` });
    }
  });

  it("names the file of a CSV that is not valid, with the line and the fix", async () => {
    const file = write("items.csv", 'id,topic\nt0,"open\n');
    const err = await failure(loadDataset({ key: "train_dataset", source: file }));
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    expect(err.message).toBe(
      `train_dataset: ${file} is not valid CSV: line 2: a quoted field starts here and is never closed; close it with " (and write a quote inside it as "")`,
    );
  });
});

describe("text data files that are not UTF-8", () => {
  it("name the file and its run key, JSON lines as CSV", async () => {
    for (const name of ["items.jsonl", "items.csv", "items.txt"]) {
      const file = write(name, Buffer.from([0x7b, 0xff, 0x7d, 0x0a]));
      expect(await failure(readDataFile(file, "train_dataset"))).toMatchObject({
        name: "DatasetError",
        code: "invalid_file",
        message: `train_dataset file ${file} is not valid UTF-8 text: invalid UTF-8 at byte offset 1 (line 1; bytes 0xFF 0x7D 0x0A); it may be Latin-1/Windows-1252 or binary. Save it as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)`,
      });
    }
  });
});

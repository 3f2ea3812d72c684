// Parquet datasets (read with hyparquet), against files pyarrow wrote
// (fixtures/datasets/make_fixtures.py): rows as plain objects, nested columns as JSON values,
// 64-bit integers as numbers when safe and as strings beyond 2**53, dates as ISO strings.
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { loadDataset } from "../src/index.js";
import { toJsonValue } from "../src/datasets/parquet.js";

const FIXTURES = path.resolve(import.meta.dirname, "fixtures/datasets");

describe("Parquet dataset files", () => {
  it("reads the same items as the JSONL fixture", async () => {
    const parquet = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.parquet") });
    const jsonl = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.jsonl") });
    expect(JSON.stringify(parquet)).toBe(JSON.stringify(jsonl));
  });

  it("keeps a conversational prompt column (a list of {role, content}) and converts int64, timestamps and nulls", async () => {
    const rows = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "conversational.parquet") });
    expect(rows).toEqual([
      {
        id: 1,
        prompt: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Name a color." },
        ],
        big: "1152921504606846977", // 2**60 + 1: beyond Number.MAX_SAFE_INTEGER, so kept exact as a string
        when: "2024-05-01T12:30:00.000Z",
        score: 0.5,
      },
      { id: 2, prompt: [{ role: "user", content: "Count to 3, please." }], big: -5, when: null, score: null },
    ]);
    // plain JSON values all the way down: what a reward module in a worker thread can receive
    expect(JSON.parse(JSON.stringify(rows))).toEqual(rows);
  });

  it("reads gzip-compressed Parquet, and zstd where node:zlib has it (else says how to re-save)", async () => {
    const jsonl = await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.jsonl") });
    expect(await loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.gzip.parquet") })).toEqual(jsonl);
    const zstd = loadDataset({ key: "train_dataset", source: path.join(FIXTURES, "items.zstd.parquet") });
    if ("zstdDecompressSync" in zlib) expect(await zstd).toEqual(jsonl);
    else
      await expect(zstd).rejects.toThrow(
        /unsupported compression codec: ZSTD; pbrl reads Parquet compressed with snappy, gzip, brotli \(zstd from Node 22\.15\) or none: re-save it/,
      );
  });

  it("converts hyparquet's values to JSON values", () => {
    expect(toJsonValue(12n)).toBe(12);
    expect(toJsonValue(-(2n ** 63n))).toBe("-9223372036854775808");
    expect(toJsonValue(new Uint8Array([104, 105]))).toBe("aGk=");
    expect(toJsonValue(new Float32Array([0.5, 2]))).toEqual([0.5, 2]);
    expect(toJsonValue({ a: undefined, b: [1n, new Date(0)] })).toEqual({ a: null, b: [1, "1970-01-01T00:00:00.000Z"] });
  });

  it("says in pbrl's words why an empty, random or damaged file is not Parquet (not hyparquet's DataView error)", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-parquet-"));
    const cases: [string, Buffer, string][] = [
      ["empty", Buffer.alloc(0), "it is empty (0 bytes)"],
      ["magic-only", Buffer.from("PAR1"), 'it does not begin and end with "PAR1", as every Parquet file does (4 bytes; is it another format, or cut short?)'],
      [
        "random",
        Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 2654435761) >>> 24)),
        'it does not begin and end with "PAR1", as every Parquet file does (5000 bytes',
      ],
      [
        "footer-too-long",
        Buffer.concat([Buffer.from("PAR1"), Buffer.alloc(20, 1), Buffer.from([0xff, 0xff, 0, 0]), Buffer.from("PAR1")]),
        "its footer says its metadata takes 65535 bytes, more than the file holds (32 bytes); it is damaged or cut short",
      ],
    ];
    // The frame of a Parquet file around bytes that are no Parquet metadata: hyparquet's finding, in pbrl's sentence.
    const noise = Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 2654435761) >>> 24));
    cases.push(["framed-noise", Buffer.concat([Buffer.from("PAR1"), noise, Buffer.from([100, 0, 0, 0]), Buffer.from("PAR1")]), "FRAMED"]);
    // A real file cut short keeps "PAR1" at its start only.
    const real = readFileSync(path.join(FIXTURES, "items.parquet"));
    cases.push(["cut", real.subarray(0, real.length - 100), `it does not begin and end with "PAR1", as every Parquet file does (${real.length - 100} bytes`]);
    for (const [name, bytes, why] of cases) {
      const file = path.join(dir, `${name}.parquet`);
      writeFileSync(file, bytes);
      const err = await loadDataset({ key: "train_dataset", source: file }).then(
        () => new Error("expected a failure"),
        (e: unknown) => e as Error,
      );
      expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
      if (why === "FRAMED")
        expect(err.message).toMatch(
          /is not a readable Parquet file: (an offset or length inside it points past its end; it is damaged or cut short|its contents could not be decoded \(.*\); it is damaged, or not written by a Parquet writer)$/,
        );
      else expect(err.message).toContain(`train_dataset: ${file} is not a readable Parquet file: ${why}`);
      expect(err.message).not.toMatch(/DataView|Offset is outside/);
    }
  });

  it("names a file that is not Parquet", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-parquet-"));
    const bad = path.join(dir, "bad.parquet");
    writeFileSync(bad, "id,topic\nt0,cat\n");
    await expect(loadDataset({ key: "train_dataset", source: bad })).rejects.toThrow(`train_dataset: ${bad} is not a readable Parquet file:`);
    // the extension decides: the same bytes as .csv load as CSV
    copyFileSync(bad, path.join(dir, "good.csv"));
    expect(await loadDataset({ key: "train_dataset", source: path.join(dir, "good.csv") })).toEqual([{ id: "t0", topic: "cat" }]);
  });
});

describe("Parquet codecs and damage, in pbrl's words", () => {
  /** items.gzip.parquet with its columns' codec (ColumnMetaData field 4, thrift compact: 0x15, then 2 zigzagged) set to another one. */
  const recoded = (codec: number): Buffer => {
    const b = Buffer.from(readFileSync(path.join(FIXTURES, "items.gzip.parquet")));
    const start = b.length - 8 - b.readUInt32LE(b.length - 8);
    let patched = 0;
    for (let i = start; i < b.length - 8; i++)
      if (b[i] === 0x15 && b[i + 1] === 0x04 && b[i + 2] === 0x16) {
        b[i + 1] = codec * 2;
        patched++;
      }
    expect(patched).toBe(2); // both columns, id and topic
    return b;
  };
  const failure = (file: string): Promise<Error> =>
    loadDataset({ key: "train_dataset", source: file }).then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );

  it("a codec pbrl cannot decode (LZO) names the codecs it reads and how to re-save the file", async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-parquet-")), "lzo.parquet");
    writeFileSync(file, recoded(3));
    const err = await failure(file);
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    expect(err.message).toBe(
      `train_dataset: ${file} is not a readable Parquet file: parquet unsupported compression codec: LZO; pbrl reads Parquet compressed with snappy, gzip, brotli${"zstdDecompressSync" in zlib ? ", zstd" : " (zstd from Node 22.15)"} or none: re-save it, e.g. pyarrow.parquet.write_table(table, path, compression="snappy")`,
    );
  });

  it("BROTLI pages go to node:zlib's brotli decoder (gzip bytes labelled BROTLI: its own finding)", async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-parquet-")), "brotli.parquet");
    writeFileSync(file, recoded(4));
    let why = "";
    try {
      zlib.brotliDecompressSync(zlib.gzipSync("x"));
    } catch (e) {
      why = (e as Error).message;
    }
    expect((await failure(file)).message).toBe(
      `train_dataset: ${file} is not a readable Parquet file: its contents could not be decoded (${why}); it is damaged, or not written by a Parquet writer`,
    );
  });

  it("a file missing the last 10 bytes of its data pages (hyparquet reads past the end of a DataView: a RangeError)", async () => {
    const real = readFileSync(path.join(FIXTURES, "items.parquet"));
    const metadata = real.length - 8 - real.readUInt32LE(real.length - 8);
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-parquet-")), "hollow.parquet");
    writeFileSync(file, Buffer.concat([real.subarray(0, metadata - 10), real.subarray(metadata)]));
    expect((await failure(file)).message).toBe(
      `train_dataset: ${file} is not a readable Parquet file: an offset or length inside it points past its end; it is damaged or cut short`,
    );
  });
});

describe("the Parquet frame, byte by byte", () => {
  const failure = (file: string): Promise<Error> =>
    loadDataset({ key: "train_dataset", source: file }).then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
  const frameOf = async (bytes: Buffer): Promise<string> => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-parquet-")), "f.parquet");
    writeFileSync(file, bytes);
    const err = await failure(file);
    expect(err).toMatchObject({ name: "DatasetError", code: "invalid_file" });
    return err.message.slice(`train_dataset: ${file} is not a readable Parquet file: `.length);
  };
  const len = (n: number) => Buffer.from([n, 0, 0, 0]);
  const P = Buffer.from("PAR1");

  it("needs 12 bytes, PAR1 at both ends: 8 bytes of PAR1PAR1 are too few, a bad start is named though the end is right", async () => {
    expect(await frameOf(Buffer.concat([P, P]))).toBe(
      'it does not begin and end with "PAR1", as every Parquet file does (8 bytes; is it another format, or cut short?)',
    );
    expect(await frameOf(Buffer.concat([Buffer.from("XXXX"), Buffer.alloc(8), len(0), P]))).toBe(
      'it does not begin and end with "PAR1", as every Parquet file does (20 bytes; is it another format, or cut short?)',
    );
  });

  it("takes a footer whose metadata fills the file exactly, or a 12-byte file with none, as a frame; one 5 bytes longer than the file is not", async () => {
    for (const bytes of [Buffer.concat([P, len(0), P]), Buffer.concat([P, Buffer.alloc(8), len(8), P])]) {
      const why = await frameOf(bytes);
      expect(why).not.toMatch(/does not begin and end|footer says/);
    }
    expect(await frameOf(Buffer.concat([P, Buffer.alloc(20), len(25), P]))).toBe(
      "its footer says its metadata takes 25 bytes, more than the file holds (32 bytes); it is damaged or cut short",
    );
  });
});

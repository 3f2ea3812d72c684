// Parquet datasets (read with hyparquet), against files pyarrow wrote
// (fixtures/datasets/make_fixtures.py): rows as plain objects, nested columns as JSON values,
// 64-bit integers as numbers when safe and as strings beyond 2**53, dates as ISO strings.
import { copyFileSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { loadDataset } from "../src/datasets/index.js";
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

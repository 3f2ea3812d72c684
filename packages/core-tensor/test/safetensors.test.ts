import { mkdtempSync, readFileSync, writeFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  parseSafetensors,
  readSafetensors,
  readSafetensorsCheckpoint,
  serializeSafetensors,
  writeSafetensors,
  writeSafetensorsCheckpoint,
  type HostTensor,
  type TensorToWrite,
} from "../src/index.js";

const FIXTURES = path.join(import.meta.dirname, "fixtures");
type Expected = Record<string, { shape: number[]; values: number[] }>;
const expected = JSON.parse(readFileSync(path.join(FIXTURES, "dtypes.json"), "utf8")) as Expected;

function f32(shape: number[], values: number[]): HostTensor {
  return { dtype: "float32", shape, data: Float32Array.from(values) };
}

function tmp(): string {
  return mkdtempSync(path.join(tmpdir(), "pbrl-st-"));
}

describe("safetensors written by the Python safetensors library", () => {
  it("reads F32, F16, BF16 and I64 with the values torch reports", async () => {
    const file = await readSafetensors(path.join(FIXTURES, "dtypes.safetensors"));
    expect(file.metadata).toEqual({ format: "pt", note: "pbrl fixture" });
    for (const name of ["f32", "f16", "bf16", "f16_specials", "bf16_specials", "i64"]) {
      const t = file.tensors.get(name)!;
      expect(t.tensor.shape).toEqual(expected[name]!.shape);
      const want = name === "i64" ? expected[name]!.values : expected[name]!.values.map((v) => Math.fround(v));
      expect(Array.from(t.tensor.data)).toEqual(want);
    }
    expect(file.tensors.get("bf16")!.storedAs).toBe("BF16");
    expect(file.tensors.get("i64")!.tensor.dtype).toBe("int32");
  });

  it("rounds float32 to F16 and BF16 exactly as torch does", () => {
    const src = expected["rounding_source_f32"]!;
    const tensors = new Map<string, TensorToWrite>([
      ["f16", { tensor: f32(src.shape, src.values), dtype: "F16" }],
      ["bf16", { tensor: f32(src.shape, src.values), dtype: "BF16" }],
    ]);
    const back = parseSafetensors(serializeSafetensors(tensors));
    expect(Array.from(back.tensors.get("f16")!.tensor.data)).toEqual(expected["f16"]!.values);
    expect(Array.from(back.tensors.get("bf16")!.tensor.data)).toEqual(expected["bf16"]!.values);
  });
});

describe("safetensors round trip", () => {
  it("writes what it reads, byte for byte, for every writable dtype", async () => {
    const dir = tmp();
    const tensors = new Map<string, TensorToWrite>([
      ["a.weight", { tensor: f32([2, 3], [1, -2, 3.5, 0, 1e-3, -7]), dtype: "F32" }],
      ["b", { tensor: f32([3], [0.5, 0.25, -8]), dtype: "BF16" }],
      ["c", { tensor: f32([1, 2], [0.1, 65504]), dtype: "F16" }],
      ["ids", { tensor: { dtype: "int32", shape: [3], data: Int32Array.from([1, -5, 2 ** 31 - 1]) }, dtype: "I64" }],
      ["n", { tensor: { dtype: "int32", shape: [2], data: Int32Array.from([4, 5]) }, dtype: "I32" }],
    ]);
    const file = path.join(dir, "x.safetensors");
    await writeSafetensors(file, tensors, { created_by: "pbrl" });
    const bytes = readFileSync(file);
    const headerLen = Number(bytes.readBigUInt64LE(0));
    expect(headerLen % 8).toBe(0);
    const back = await readSafetensors(file);
    expect(back.metadata).toEqual({ format: "pt", created_by: "pbrl" });
    expect(Array.from(back.tensors.get("a.weight")!.tensor.data)).toEqual(Array.from(Float32Array.from([1, -2, 3.5, 0, 1e-3, -7])));
    expect(Array.from(back.tensors.get("ids")!.tensor.data)).toEqual([1, -5, 2 ** 31 - 1]);
    const again = new Map<string, TensorToWrite>([...back.tensors].map(([k, v]) => [k, { tensor: v.tensor, dtype: v.storedAs as TensorToWrite["dtype"] }]));
    expect(Buffer.from(serializeSafetensors(again, { created_by: "pbrl" })).equals(bytes)).toBe(true);
  });

  it("writes deferred tensors one at a time: each is read when its bytes are due, and the file is the one serialized in memory", async () => {
    const dir = tmp();
    const file = path.join(dir, "w.safetensors");
    const values = [f32([2, 3], [1, 2, 3, 4, 5, 6]), f32([4], [-1, 0.5, 7, 8]), f32([1], [9])];
    const writtenWhenRead: number[] = [];
    const deferred = new Map<string, TensorToWrite>(
      values.map((t, i) => [
        `t${i}`,
        {
          dtype: i === 1 ? "BF16" : "F32",
          tensor: {
            dtype: "float32",
            shape: t.shape,
            read: () => {
              // The temporary sibling holds the header and the tensors before this one, no more.
              const partial = readdirSync(dir).filter((n) => n.startsWith(".w.safetensors.tmp-"));
              expect(partial).toHaveLength(1);
              writtenWhenRead.push(readFileSync(path.join(dir, partial[0]!)).byteLength);
              return t.data;
            },
          },
        },
      ]),
    );
    const eager = new Map<string, TensorToWrite>(values.map((t, i) => [`t${i}`, { dtype: i === 1 ? "BF16" : "F32", tensor: t }]));
    await writeSafetensors(file, deferred, { note: "x" });
    const bytes = readFileSync(file);
    expect(new Uint8Array(bytes)).toEqual(serializeSafetensors(eager, { note: "x" }));
    const head = bytes.byteLength - (6 * 4 + 4 * 2 + 1 * 4);
    expect(writtenWhenRead).toEqual([head, head + 24, head + 24 + 8]);
    expect(readdirSync(dir)).toEqual(["w.safetensors"]);
  });

  it("a deferred tensor whose data does not match its shape stops the write and leaves nothing behind", async () => {
    const dir = tmp();
    const bad = new Map<string, TensorToWrite>([["a", { dtype: "F32", tensor: { dtype: "float32", shape: [3], read: () => new Float32Array(2) } }]]);
    await expect(writeSafetensors(path.join(dir, "bad.safetensors"), bad)).rejects.toThrow(/tensor "a": 2 values do not match shape \[3\]/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("shards a checkpoint with an index and reads it back", async () => {
    const dir = tmp();
    const tensors = new Map<string, TensorToWrite>();
    for (let i = 0; i < 5; i++)
      tensors.set(`layer.${i}.w`, {
        tensor: f32(
          [10],
          Array.from({ length: 10 }, (_, j) => i * 10 + j),
        ),
        dtype: "F32",
      });
    const files = await writeSafetensorsCheckpoint(dir, tensors, { maxShardBytes: 100 });
    expect(files).toEqual([
      "model-00001-of-00003.safetensors",
      "model-00002-of-00003.safetensors",
      "model-00003-of-00003.safetensors",
      "model.safetensors.index.json",
    ]);
    const index = JSON.parse(readFileSync(path.join(dir, "model.safetensors.index.json"), "utf8")) as {
      metadata: { total_size: number };
      weight_map: Record<string, string>;
    };
    expect(index.metadata.total_size).toBe(200);
    expect(Object.keys(index.weight_map).sort()).toEqual([...tensors.keys()].sort());
    const back = await readSafetensorsCheckpoint(dir);
    expect(Array.from(back.tensors.get("layer.3.w")!.tensor.data)).toEqual(Array.from({ length: 10 }, (_, j) => 30 + j));
    expect(readdirSync(dir).filter((f) => f.includes(".tmp-"))).toEqual([]);
  });

  it("fails clearly on truncated files and missing weights", async () => {
    const dir = tmp();
    const tensors = new Map<string, TensorToWrite>([["w", { tensor: f32([4], [1, 2, 3, 4]), dtype: "F32" }]]);
    const bytes = serializeSafetensors(tensors);
    const cut = path.join(dir, "cut.safetensors");
    writeFileSync(cut, bytes.subarray(0, bytes.byteLength - 3));
    await expect(readSafetensors(cut)).rejects.toThrow(/cut\.safetensors.*"w".*truncated/);
    writeFileSync(cut, bytes.subarray(0, 20));
    await expect(readSafetensors(cut)).rejects.toThrow(/header length .* exceeds/);
    await expect(readSafetensorsCheckpoint(dir)).rejects.toThrow(/neither model\.safetensors nor model\.safetensors\.index\.json/);
  });
});

// Each way a safetensors file or shard index can be malformed, with the exact message a user sees.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parseSafetensors, readSafetensorsCheckpoint, SafetensorsError } from "../src/index.js";

const CORRUPT = "the file is corrupt or not safetensors; download or save it again";

function file(header: unknown, dataLen: number): Uint8Array {
  const json = typeof header === "string" ? new TextEncoder().encode(header) : new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + dataLen);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  return out;
}

const f32 = (begin: number, end: number, shape = [(end - begin) / 4]) => ({ dtype: "F32", shape, data_offsets: [begin, end] });

describe("malformed safetensors headers", () => {
  it.each<[string, Uint8Array, string]>([
    [
      "a non-object header",
      file([1, 2], 0),
      `x.st: header must be a JSON object mapping tensor names to {dtype, shape, data_offsets}, got an array ([1,2]); ${CORRUPT}`,
    ],
    ["a null header", file(null, 0), `x.st: header must be a JSON object mapping tensor names to {dtype, shape, data_offsets}, got null; ${CORRUPT}`],
    [
      "a header that is not UTF-8",
      file("\u0000", 0).map((b, i) => (i === 8 ? 0xff : b)),
      "x.st: header is not valid UTF-8; the file is corrupt or not safetensors",
    ],
    ["metadata that is not an object", file({ __metadata__: "pt" }, 0), `x.st: __metadata__ must be an object of strings, got "pt"; ${CORRUPT}`],
    [
      "a metadata value that is not a string",
      file({ __metadata__: { format: "pt", step: 3 } }, 0),
      `x.st: __metadata__ "step" must be a string, got 3; ${CORRUPT}`,
    ],
    ["a tensor entry that is not an object", file({ w: 5 }, 0), `x.st: tensor "w" must be an object {dtype, shape, data_offsets}, got 5; ${CORRUPT}`],
    [
      "a missing dtype",
      file({ w: { shape: [1], data_offsets: [0, 4] } }, 4),
      `x.st: tensor "w" has unsupported dtype nothing (the field is missing); supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL`,
    ],
    [
      "an inherited property as dtype",
      file({ w: { dtype: "toString", shape: [1], data_offsets: [0, 4] } }, 4),
      `x.st: tensor "w" has unsupported dtype "toString"; supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL`,
    ],
    [
      "a shape that is not an array",
      file({ w: { dtype: "F32", shape: 4, data_offsets: [0, 16] } }, 16),
      `x.st: tensor "w": shape must be an array of integers ≥ 0, got 4; ${CORRUPT}`,
    ],
    [
      "a negative dimension",
      file({ w: { dtype: "F32", shape: [-1], data_offsets: [8, 4] } }, 8),
      `x.st: tensor "w": shape must be an array of integers ≥ 0, got an array ([-1]); ${CORRUPT}`,
    ],
    [
      "a fractional dimension",
      file({ w: f32(0, 16, [0.5, 8]) }, 16),
      `x.st: tensor "w": shape must be an array of integers ≥ 0, got an array ([0.5,8]); ${CORRUPT}`,
    ],
    [
      "offsets in reverse",
      file({ w: f32(8, 4, [1]) }, 8),
      `x.st: tensor "w": data_offsets must be [begin, end] with integers 0 ≤ begin ≤ end, got an array ([8,4]); ${CORRUPT}`,
    ],
    [
      "a negative offset",
      file({ w: f32(-4, 0, [1]) }, 8),
      `x.st: tensor "w": data_offsets must be [begin, end] with integers 0 ≤ begin ≤ end, got an array ([-4,0]); ${CORRUPT}`,
    ],
    [
      "string offsets",
      file({ w: { dtype: "F32", shape: [1], data_offsets: ["0", "4"] } }, 4),
      `x.st: tensor "w": data_offsets must be [begin, end] with integers 0 ≤ begin ≤ end, got an array (["0","4"]); ${CORRUPT}`,
    ],
    [
      "offsets not matching the shape",
      file({ w: f32(0, 8, [3]) }, 8),
      `x.st: tensor "w": data_offsets [0, 8] do not match shape [3] of F32 within 8 data bytes (truncated file?)`,
    ],
    [
      "a shape of 2^53 values",
      file({ w: f32(0, 8, [2 ** 26, 2 ** 27]) }, 8),
      `x.st: tensor "w": data_offsets [0, 8] do not match shape [67108864,134217728] of F32 within 8 data bytes (truncated file?)`,
    ],
    ["overlapping tensors", file({ a: f32(0, 8), b: f32(4, 12) }, 12), `x.st: tensors "a" [0, 8] and "b" [4, 12] overlap; ${CORRUPT}`],
    ["a gap between tensors", file({ a: f32(0, 4), b: f32(8, 12) }, 12), `x.st: data bytes [4, 8) belong to no tensor (before "b"); ${CORRUPT}`],
    ["bytes after the last tensor", file({ a: f32(0, 4) }, 12), `x.st: the last 8 data bytes belong to no tensor; ${CORRUPT}`],
  ])("%s", (_name, bytes, message) => {
    let err: unknown;
    try {
      parseSafetensors(bytes, "x.st");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SafetensorsError);
    expect((err as Error).message).toBe(message);
  });

  it("tensors in any offset order, empty tensors, and a __proto__ name are fine", () => {
    const f = parseSafetensors(
      file({ __metadata__: { __proto__: "kept" }, b: f32(4, 8), a: f32(0, 4), e: f32(8, 8, [0, 3]), ["__proto__"]: f32(8, 12) }, 12),
      "x.st",
    );
    expect([...f.tensors.keys()].sort()).toEqual(["__proto__", "a", "b", "e"]);
    expect(f.tensors.get("e")!.tensor.shape).toEqual([0, 3]);
    expect(Object.getPrototypeOf(f.metadata)).toBe(Object.prototype);
  });
});

describe("malformed shard indexes", () => {
  const setup = (index: unknown): string => {
    const dir = mkdtempSync(path.join(tmpdir(), "pbrl-st-index-"));
    writeFileSync(path.join(dir, "model.safetensors.index.json"), typeof index === "string" ? index : JSON.stringify(index));
    writeFileSync(path.join(dir, "one.safetensors"), file({ w: f32(0, 4) }, 4));
    writeFileSync(path.join(dir, "two.safetensors"), file({ w: f32(0, 4) }, 4));
    mkdirSync(path.join(dir, "sub"));
    writeFileSync(path.join(dir, "sub", "three.safetensors"), file({ v: f32(0, 4) }, 4));
    return dir;
  };

  it.each<[string, unknown, (dir: string) => string]>([
    [
      "an index that is null",
      null,
      (d) =>
        `${d}/model.safetensors.index.json has no weight_map object (tensor name → shard file); the index is corrupt, download or save the checkpoint again`,
    ],
    [
      "a weight_map that is an array",
      { weight_map: ["one.safetensors"] },
      (d) =>
        `${d}/model.safetensors.index.json has no weight_map object (tensor name → shard file); the index is corrupt, download or save the checkpoint again`,
    ],
    ["a shard name that is a number", { weight_map: { w: 1 } }, (d) => `${d}/model.safetensors.index.json: weight_map "w" must name a shard file, got 1`],
    [
      "a shard outside the folder",
      { weight_map: { w: "../one.safetensors" } },
      (d) =>
        `${d}/model.safetensors.index.json: weight_map "w" names "../one.safetensors", which is not a file inside ${d}; shard files must lie in the checkpoint folder`,
    ],
    [
      "an absolute shard path",
      { weight_map: { w: "/etc/hostname" } },
      (d) =>
        `${d}/model.safetensors.index.json: weight_map "w" names "/etc/hostname", which is not a file inside ${d}; shard files must lie in the checkpoint folder`,
    ],
    [
      "a tensor in two shards",
      { weight_map: { w: "one.safetensors", x: "two.safetensors" } },
      (d) =>
        `${d}/model.safetensors.index.json: tensor "w" is stored in both one.safetensors and two.safetensors; the checkpoint is inconsistent, save it again`,
    ],
  ])("%s", async (_name, index, message) => {
    const dir = setup(index);
    const err = await readSafetensorsCheckpoint(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SafetensorsError);
    expect((err as Error).message).toBe(message(dir));
  });

  it("a shard in a subfolder of the checkpoint is allowed", async () => {
    const f = await readSafetensorsCheckpoint(setup({ weight_map: { w: "one.safetensors", v: "sub/three.safetensors" } }));
    expect([...f.tensors.keys()].sort()).toEqual(["v", "w"]);
  });
});

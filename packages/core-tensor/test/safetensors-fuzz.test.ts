// Property-based tests of the safetensors reader: whatever the bytes — random, or a valid file
// with its header length, JSON header or data mutated — it returns tensors consistent with their
// shapes or throws a SafetensorsError whose message names the file. Never a TypeError, a
// RangeError from an allocation, or a silently wrong tensor.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseSafetensors, readSafetensorsCheckpoint, SafetensorsError, serializeSafetensors, type SafetensorsFile, type TensorToWrite } from "../src/index.js";

const SOURCE = "fuzz.safetensors";
const RUNS = { numRuns: 1000 };
const DTYPES = ["F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"];

/** A small valid file: three tensors, one of each family pbrl writes. */
const VALID = serializeSafetensors(
  new Map<string, TensorToWrite>([
    ["a", { tensor: { dtype: "float32", shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) }, dtype: "F32" }],
    ["b", { tensor: { dtype: "float32", shape: [4], data: Float32Array.from([0.5, -1, 2, 8]) }, dtype: "BF16" }],
    ["c", { tensor: { dtype: "int32", shape: [2], data: Int32Array.from([7, -7]) }, dtype: "I64" }],
  ]),
  { note: "fuzz" },
);
const VALID_HEADER_LEN = Number(new DataView(VALID.buffer).getBigUint64(0, true));
const VALID_DATA = VALID.subarray(8 + VALID_HEADER_LEN);

function file(header: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  out.set(data, 8 + json.byteLength);
  return out;
}

/** A returned file must be internally consistent: every tensor as many values as its shape says. */
function expectConsistent(f: SafetensorsFile): void {
  for (const [name, t] of f.tensors) {
    expect(
      t.tensor.shape.every((d) => Number.isSafeInteger(d) && d >= 0),
      name,
    ).toBe(true);
    expect(t.tensor.data.length, name).toBe(t.tensor.shape.reduce((a, b) => a * b, 1));
    expect(DTYPES, name).toContain(t.storedAs);
  }
  for (const v of Object.values(f.metadata)) expect(typeof v).toBe("string");
}

/** Parses and checks the outcome: a consistent file, or a SafetensorsError naming the source. */
function parsesOrFailsClearly(bytes: Uint8Array): void {
  let result: SafetensorsFile;
  try {
    result = parseSafetensors(bytes, SOURCE);
  } catch (err) {
    expect(err).toBeInstanceOf(SafetensorsError);
    const message = (err as Error).message;
    expect(message.startsWith(`${SOURCE}: `), message).toBe(true);
    expect(message).not.toMatch(/\[object Object\]|undefined is not|Cannot read prop/);
    return;
  }
  expectConsistent(result);
}

// JSON-ish values that break naive checks: wrong types, negatives, fractions, huge and unsafe numbers.
const nasty = fc.oneof(
  fc.integer({ min: -5, max: 40 }),
  fc.constantFrom(-1, 0.5, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, 2 ** 64, Number.MAX_SAFE_INTEGER, 1e-320),
  fc.string({ maxLength: 6 }),
  fc.constantFrom(null, true, false, [], {}),
);
const shape = fc.oneof(fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 3 }), fc.array(nasty, { maxLength: 3 }), nasty);
const offsets = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 64 })),
  fc.tuple(nasty, nasty),
  fc.array(nasty, { maxLength: 4 }),
  nasty,
);
const dtype = fc.oneof(fc.constantFrom(...DTYPES), fc.constantFrom("F8_E4M3", "U64", "toString", "__proto__", "constructor", "f32"), nasty);
const entry = fc.oneof({ weight: 4, arbitrary: fc.record({ dtype, shape, data_offsets: offsets }, { requiredKeys: [] }) }, { weight: 1, arbitrary: nasty });
const metadata = fc.oneof(fc.dictionary(fc.string({ maxLength: 4 }), fc.oneof(fc.string({ maxLength: 4 }), nasty), { maxKeys: 3 }), nasty);
const names = fc.oneof(fc.string({ maxLength: 5 }), fc.constantFrom("__proto__", "constructor", "toString", "__metadata__"));

describe("parseSafetensors on generated inputs", () => {
  it("random bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => parsesOrFailsClearly(bytes)),
      RUNS,
    );
  });

  it("random bytes after a plausible header length", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.integer({ min: 0, max: 210 }), (body, len) => {
        const bytes = new Uint8Array(8 + body.byteLength);
        new DataView(bytes.buffer).setBigUint64(0, BigInt(len), true);
        bytes.set(body, 8);
        parsesOrFailsClearly(bytes);
      }),
      RUNS,
    );
  });

  it("a valid file with its header length replaced", () => {
    const lengths = fc.oneof(fc.integer({ min: 0, max: VALID.byteLength + 8 }).map(BigInt), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }));
    fc.assert(
      fc.property(lengths, (len) => {
        const bytes = VALID.slice();
        new DataView(bytes.buffer).setBigUint64(0, len, true);
        parsesOrFailsClearly(bytes);
      }),
      RUNS,
    );
  });

  it("a valid file truncated, or with bytes overwritten", () => {
    const edit = fc.record({
      cut: fc.integer({ min: 0, max: VALID.byteLength }),
      at: fc.array(fc.tuple(fc.nat(VALID.byteLength - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(edit, ({ cut, at }) => {
        const bytes = VALID.slice(0, cut);
        for (const [i, b] of at) if (i < bytes.byteLength) bytes[i] = b;
        parsesOrFailsClearly(bytes);
      }),
      RUNS,
    );
  });

  it("generated JSON headers: wrong dtypes, shapes and offsets, odd metadata, non-object roots", () => {
    const header = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .tuple(fc.dictionary(names, entry, { maxKeys: 4 }), fc.option(metadata, { nil: undefined }))
          .map(([h, m]) => (m === undefined ? h : { ...h, __metadata__: m })),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    );
    fc.assert(
      fc.property(header, fc.integer({ min: 0, max: 80 }), (h, dataLen) => parsesOrFailsClearly(file(h, new Uint8Array(dataLen)))),
      RUNS,
    );
  });

  it("the valid header with one tensor's fields changed", () => {
    const base = JSON.parse(new TextDecoder().decode(VALID.subarray(8, 8 + VALID_HEADER_LEN))) as Record<string, Record<string, unknown>>;
    const change = fc.record({
      name: fc.constantFrom("a", "b", "c"),
      field: fc.constantFrom("dtype", "shape", "data_offsets"),
      value: fc.oneof(dtype, shape, offsets),
    });
    fc.assert(
      fc.property(change, fc.integer({ min: -8, max: 8 }), ({ name, field, value }, extra) => {
        const h = structuredClone(base);
        h[name]![field] = value;
        const data = extra >= 0 ? new Uint8Array([...VALID_DATA, ...new Uint8Array(extra)]) : VALID_DATA.subarray(0, VALID_DATA.byteLength + extra);
        parsesOrFailsClearly(file(h, data));
      }),
      RUNS,
    );
  });

  it("headers whose offsets overlap, leave gaps or exceed the data are refused", () => {
    // Two F32 tensors of 2 values; only the layout [0, 8], [8, 16] over 16 bytes is valid.
    fc.assert(
      fc.property(fc.tuple(fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 24 })), fc.integer({ min: 8, max: 32 }), ([p, q], dataLen) => {
        const h = { x: { dtype: "F32", shape: [2], data_offsets: [p, p + 8] }, y: { dtype: "F32", shape: [2], data_offsets: [q, q + 8] } };
        const valid = dataLen === 16 && ((p === 0 && q === 8) || (p === 8 && q === 0));
        const bytes = file(h, new Uint8Array(dataLen));
        if (valid) expect(parseSafetensors(bytes, SOURCE).tensors.size).toBe(2);
        else expect(() => parseSafetensors(bytes, SOURCE)).toThrow(SafetensorsError);
      }),
      RUNS,
    );
  });
});

describe("readSafetensorsCheckpoint on generated shard indexes", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "pbrl-st-fuzz-"));
  const indexPath = path.join(dir, "model.safetensors.index.json");
  writeFileSync(path.join(dir, "model-00001-of-00002.safetensors"), VALID);
  writeFileSync(path.join(dir, "model-00002-of-00002.safetensors"), file({ d: { dtype: "F32", shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4)));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("bad index JSON, weight maps of the wrong shape, shard names outside the folder", async () => {
    const shard = fc.oneof(
      fc.constantFrom(
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "missing.safetensors",
        "../model-00001-of-00002.safetensors",
        "/etc/hostname",
        "",
        ".",
      ),
      nasty,
    );
    const weightMap = fc.oneof(fc.dictionary(fc.constantFrom("a", "b", "c", "d", "e"), shard, { maxKeys: 5 }), nasty);
    const index = fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .record({ metadata: fc.jsonValue({ maxDepth: 1 }), weight_map: weightMap }, { requiredKeys: ["weight_map"] })
          .map((o) => JSON.stringify(o)),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
    );
    await fc.assert(
      fc.asyncProperty(index, async (text) => {
        writeFileSync(indexPath, text);
        try {
          const f = await readSafetensorsCheckpoint(dir);
          expectConsistent(f);
        } catch (err) {
          expect(err).toBeInstanceOf(SafetensorsError);
          expect((err as Error).message).toContain(dir);
        }
      }),
      RUNS,
    );
  });
});

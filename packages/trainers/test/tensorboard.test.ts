// TensorBoard event files (report_to: tensorboard): the hand-written encoding against values
// worked out by hand from the protobuf wire format, and the writer round-tripped through the reader.
// tensorboard-python.test.ts checks the same files with TensorBoard's own loader.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  crc32c,
  encodeFileVersionEvent,
  encodeSessionStartEvent,
  encodeSummaryEvent,
  encodeSummaryValue,
  eventFileName,
  frameRecord,
  histogramOf,
  maskedCrc32c,
  parseRecords,
  readEvents,
  tensorBoardDir,
  TensorBoardWriter,
} from "../src/tensorboard/index.js";
import { decodeFields, varint } from "../src/tensorboard/protobuf.js";
import { binEdges, histogram as rewardHistogram, NUM_BINS } from "../src/reward-distribution.js";

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const ascii = (s: string): string => Buffer.from(s, "ascii").toString("hex");
/** Little-endian IEEE double bytes, written out by hand below for the values used. */
const D1_5 = "000000000000f83f";

describe("crc32c", () => {
  it("matches the standard check value and the RFC 3720 (iSCSI) vectors", () => {
    expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it("masks as TensorFlow does: rotate right 15, add 0xa282ead8", () => {
    // 0xE3069283 >>> 15 = 0x1C60D; (0xE3069283 << 17) mod 2^32 = 0x25060000; OR = 0x2507C60D; + 0xA282EAD8 = 0xC78AB0E5
    expect(maskedCrc32c(new TextEncoder().encode("123456789"))).toBe(0xc78ab0e5);
    expect(maskedCrc32c(new Uint8Array(0))).toBe(0xa282ead8);
  });
});

describe("protobuf varint", () => {
  it("encodes the protobuf documentation's examples and int64 negatives", () => {
    expect(hex(varint(1))).toBe("01");
    expect(hex(varint(150))).toBe("9601");
    expect(hex(varint(300))).toBe("ac02");
    expect(hex(varint(2 ** 32))).toBe("8080808010");
    expect(hex(varint(-1))).toBe("ffffffffffffffffff01");
    expect(() => varint(1.5)).toThrow(/safe integer/);
  });

  it("decodes what it encodes, including 64-bit values", () => {
    const fields = decodeFields(Uint8Array.from([0x10, ...varint(-2), 0x18, ...varint(2n ** 63n)]));
    expect(fields).toEqual([
      { field: 2, wire: 0, value: 2n ** 64n - 2n },
      { field: 3, wire: 0, value: 2n ** 63n },
    ]);
    expect(() => decodeFields(Uint8Array.from([0x0a, 0x05, 0x01]))).toThrow(/past the end/);
  });
});

describe("Event encoding, byte for byte", () => {
  it("file_version event: wall_time (1, double), file_version (3), source_metadata.writer (10.1)", () => {
    const expected = "09" + D1_5 + "1a0d" + ascii("brain.Event:2") + "5206" + "0a04" + ascii("pbrl");
    expect(hex(encodeFileVersionEvent(1.5))).toBe(expected);
  });

  it("scalar summary event: step (2, varint), summary (5) > value (1) > tag (1), simple_value (2, float)", () => {
    // Value = 0a 01 'a' | 15 <1.0f = 0000803f>  (8 bytes); Summary = 0a 08 <Value> (10); Event = 09 <1.5> 10 02 2a 0a <Summary>
    const expected = "09" + D1_5 + "1002" + "2a0a" + "0a08" + "0a0161" + "150000803f";
    expect(hex(encodeSummaryEvent(1.5, 2, [{ tag: "a", simpleValue: 1 }]))).toBe(expected);
  });

  it("leaves out proto3 defaults (wall_time 0, step 0) but keeps a 0 simple_value (a oneof member)", () => {
    expect(hex(encodeSummaryEvent(0, 0, [{ tag: "a", simpleValue: 0 }]))).toBe("2a0a0a080a01611500000000");
  });

  it("text value: tensor (8) DT_STRING (1: 7), scalar shape (2: empty), string_val (8); metadata (9) plugin_data.plugin_name 'text'", () => {
    const tensor = "0807" + "1200" + "4202" + ascii("hi");
    const metadata = "0a06" + "0a04" + ascii("text");
    expect(hex(encodeSummaryValue({ tag: "t", text: "hi" }))).toBe("0a0174" + "4208" + tensor + "4a08" + metadata);
  });

  it("histogram value: histo (5) with min..sum_squares (1-5, doubles) and packed bucket_limit (6) / bucket (7)", () => {
    const histo = [
      "09000000000000f03f",
      "110000000000000040",
      "190000000000000040",
      "210000000000000840",
      "290000000000001440",
      "32080000000000000040",
      "3a080000000000000040",
    ].join("");
    const value = encodeSummaryValue({ tag: "h", histogram: { min: 1, max: 2, num: 2, sum: 3, sumSquares: 5, bucketLimit: [2], bucket: [2] } });
    expect(hex(value)).toBe("0a0168" + "2a41" + histo);
  });

  it("SessionLog START event: session_log (7) > status (1) = 1", () => {
    expect(hex(encodeSessionStartEvent(1.5, 7))).toBe("09" + D1_5 + "1007" + "3a020801");
  });

  it("rejects a fractional step and an empty tag", () => {
    expect(() => encodeSummaryEvent(1, 1.5, [])).toThrow(/integer/);
    expect(() => encodeSummaryValue({ tag: "", simpleValue: 1 })).toThrow(/empty/);
  });
});

describe("TFRecord framing", () => {
  it("frames as uint64 length, masked CRC of the length, data, masked CRC of the data", () => {
    const data = new TextEncoder().encode("123456789");
    // masked crc32c of the 8 length bytes 09 00 .. 00 is 0x3971F937 (also from TensorBoard's pywrap_tensorflow.masked_crc32c)
    expect(hex(frameRecord(data))).toBe("0900000000000000" + "37f97139" + ascii("123456789") + "e5b08ac7");
  });

  it("checks both CRCs and stops before an incomplete last record", () => {
    const a = frameRecord(Uint8Array.of(1, 2, 3));
    const b = frameRecord(Uint8Array.of(4, 5));
    const both = Uint8Array.from([...a, ...b]);
    expect(parseRecords(both).records.map((r) => [...r])).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(parseRecords(both.subarray(0, both.length - 1))).toMatchObject({ records: [Uint8Array.of(1, 2, 3)], truncatedBytes: b.length - 1 });
    const badData = both.slice();
    badData[13] = badData[13]! ^ 1;
    expect(() => parseRecords(badData)).toThrow(/data CRC/);
    const badLength = both.slice();
    badLength[0] = badLength[0]! ^ 1;
    expect(() => parseRecords(badLength)).toThrow(/length CRC/);
  });
});

describe("histogramOf", () => {
  it("splits the data's range into equal buckets; the max goes in the last one", () => {
    expect(histogramOf([0, 1, 2, 3, 4], 2)).toEqual({ min: 0, max: 4, num: 5, sum: 10, sumSquares: 30, bucketLimit: [2, 4], bucket: [2, 3] });
  });

  it("with a fixed range, counts values outside it in the edge buckets and drops non-finite values", () => {
    const h = histogramOf([-1, 0, 9.5, 10, 11, Number.NaN, Number.POSITIVE_INFINITY], { min: 0, max: 10, bins: 5 });
    expect(h).toEqual({ min: -1, max: 11, num: 5, sum: 29.5, sumSquares: 1 + 90.25 + 100 + 121, bucketLimit: [2, 4, 6, 8, 10], bucket: [2, 0, 0, 0, 3] });
  });

  it("over the declared reward range, counts as reward_distributions/*.json does", () => {
    const rewards = [-1, -0.3, 0, 0.1, 0.1249999, 0.125, 0.5, 0.99, 1, 2, Number.NaN];
    const h = histogramOf(rewards, { min: -0.5, max: 1.5, bins: NUM_BINS });
    const edges = binEdges(-0.5, 1.5);
    expect(h?.bucketLimit).toEqual(edges.slice(1));
    expect(h?.bucket).toEqual(rewardHistogram(rewards, edges));
  });

  it("one bucket for equal values, nothing without finite values, and checks its arguments", () => {
    expect(histogramOf([3, 3], 10)).toEqual({ min: 3, max: 3, num: 2, sum: 6, sumSquares: 18, bucketLimit: [3], bucket: [2] });
    expect(histogramOf([Number.NaN])).toBeUndefined();
    expect(() => histogramOf([1], 0)).toThrow(/bins/);
    expect(() => histogramOf([1], { min: 1, max: 1, bins: 2 })).toThrow(/range/);
  });
});

describe("TensorBoardWriter", () => {
  const dirs: string[] = [];
  const tmp = (): string => {
    const d = mkdtempSync(path.join(tmpdir(), "pbrl-tb-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("names the file per start and writes file_version first", () => {
    expect(eventFileName(1700000000.9, "gpu-01.lab", 42)).toBe("events.out.tfevents.1700000000.gpu-01.lab.42.pbrl");
    expect(eventFileName(1, "a/b c", 7)).toBe("events.out.tfevents.1.a_b_c.7.pbrl");
    expect(tensorBoardDir("/runs/x")).toBe(path.join("/runs/x", "tensorboard"));
    const dir = path.join(tmp(), "tensorboard");
    const w = new TensorBoardWriter(dir, { now: () => 1700000000.25, hostname: "h" });
    w.close();
    expect(path.basename(w.file)).toBe(`events.out.tfevents.1700000000.h.${process.pid}.pbrl`);
    expect(readEvents(w.file)).toEqual([{ wallTime: 1700000000.25, step: 0, fileVersion: "brain.Event:2", writer: "pbrl", values: [] }]);
  });

  it("round-trips scalars (float32), text and histograms, one record per call", () => {
    const w = new TensorBoardWriter(tmp(), { now: () => 100 });
    expect(w.scalars(3, { kind: "train", loss: 0.1, "eval/turn_1/reward_mean": -2.5, big: 1e40, bad: Number.NaN }, 101.5)).toBe(4);
    expect(w.scalars(4, { kind: "eval" })).toBe(0);
    w.text(5, "samples/agent_0", "**prompt**\n\n| a | b |\n|---|---|\n| é | 🙂 |");
    expect(w.histogram(6, "reward/distribution", [1, 2, 3, 4], 2)).toBe(true);
    expect(w.histogram(7, "reward/empty", [])).toBe(false);
    w.close();
    const events = readEvents(w.file);
    expect(events).toHaveLength(4);
    expect(events[1]).toEqual({
      wallTime: 101.5,
      step: 3,
      values: [
        { tag: "loss", simpleValue: Math.fround(0.1) },
        { tag: "eval/turn_1/reward_mean", simpleValue: -2.5 },
        { tag: "big", simpleValue: Number.POSITIVE_INFINITY },
        { tag: "bad", simpleValue: Number.NaN },
      ],
    });
    expect(events[2]).toEqual({
      wallTime: 100,
      step: 5,
      values: [{ tag: "samples/agent_0", text: ["**prompt**\n\n| a | b |\n|---|---|\n| é | 🙂 |"], pluginName: "text" }],
    });
    expect(events[3]!.values).toEqual([
      { tag: "reward/distribution", histogram: { min: 1, max: 4, num: 4, sum: 10, sumSquares: 30, bucketLimit: [2.5, 4], bucket: [2, 2] } },
    ]);
  });

  it("writes SessionLog START at the resume step after file_version", () => {
    const w = new TensorBoardWriter(tmp(), { now: () => 5, resumeStep: 40 });
    w.close();
    expect(readEvents(w.file).map((e) => [e.step, e.fileVersion, e.sessionStatus])).toEqual([
      [0, "brain.Event:2", undefined],
      [40, undefined, 1],
    ]);
  });

  it("never reuses a file: a second start in the same second gets a new name that sorts after", () => {
    const dir = tmp();
    const a = new TensorBoardWriter(dir, { now: () => 1, hostname: "h" });
    a.scalars(1, { x: 1 });
    a.close();
    const sizeA = statSync(a.file).size;
    const b = new TensorBoardWriter(dir, { now: () => 1, hostname: "h" });
    b.close();
    expect(b.file).toBe(`${a.file}.1`);
    expect(statSync(a.file).size).toBe(sizeA);
    expect(readdirSync(dir).sort()).toEqual([path.basename(a.file), path.basename(b.file)]);
  });

  it("appends each record as it is written, so a crash mid-record loses only that record", () => {
    const w = new TensorBoardWriter(tmp(), { now: () => 1 });
    w.scalars(1, { loss: 1 });
    w.scalars(2, { loss: 2 });
    // read while still open: everything written is already in the file
    expect(readEvents(w.file).map((e) => e.step)).toEqual([0, 1, 2]);
    w.close();
    truncateSync(w.file, statSync(w.file).size - 3);
    expect(readEvents(w.file).map((e) => e.step)).toEqual([0, 1]);
    expect(() => w.scalars(3, { loss: 3 })).toThrow(/closed/);
    w.close();
  });

  it("readEvents throws on a corrupted record", () => {
    const w = new TensorBoardWriter(tmp(), { now: () => 1 });
    w.scalars(1, { loss: 1 });
    w.close();
    const bytes = readFileSync(w.file);
    bytes[bytes.length - 6] = bytes[bytes.length - 6]! ^ 0xff;
    writeFileSync(w.file, bytes);
    expect(() => readEvents(w.file)).toThrow(/CRC/);
  });
});

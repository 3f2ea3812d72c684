// Reading pbrl's event files back: enough of tensorflow.Event for tests and tools to check what
// a run wrote (field numbers: see event.ts). Unknown fields are ignored, as protobuf readers do.
import { readFileSync } from "node:fs";
import { DT_STRING, type HistogramData } from "./event.js";
import { decodeFields, readDouble, readDoubles, readFloat, WIRE_VARINT, type ProtoField } from "./protobuf.js";
import { parseRecords } from "./record.js";

export interface ReadSummaryValue {
  tag: string;
  simpleValue?: number;
  /** The string_val entries of a DT_STRING tensor (one for pbrl's text values). */
  text?: string[];
  /** metadata.plugin_data.plugin_name, when the value carries metadata. */
  pluginName?: string;
  histogram?: HistogramData;
}

export interface TensorBoardEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  /** source_metadata.writer */
  writer?: string;
  /** session_log.status (1 = START) */
  sessionStatus?: number;
  /** The summary's values; empty for events without a summary. */
  values: ReadSummaryValue[];
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function bytesOf(f: ProtoField): Uint8Array {
  if (f.wire === WIRE_VARINT) throw new Error(`field ${f.field}: expected bytes, got a varint`);
  return f.bytes;
}

function varintOf(f: ProtoField): bigint {
  if (f.wire !== WIRE_VARINT) throw new Error(`field ${f.field}: expected a varint`);
  return f.value;
}

function decodeHistogram(buf: Uint8Array): HistogramData {
  const h: HistogramData = { min: 0, max: 0, num: 0, sum: 0, sumSquares: 0, bucketLimit: [], bucket: [] };
  const scalar = ["min", "max", "num", "sum", "sumSquares"] as const;
  for (const f of decodeFields(buf)) {
    if (f.field >= 1 && f.field <= 5) h[scalar[f.field - 1]!] = readDouble(bytesOf(f));
    else if (f.field === 6) h.bucketLimit.push(...readDoubles(f));
    else if (f.field === 7) h.bucket.push(...readDoubles(f));
  }
  return h;
}

function decodeTextTensor(buf: Uint8Array): string[] {
  let dtype = 0;
  const strings: string[] = [];
  for (const f of decodeFields(buf)) {
    if (f.field === 1) dtype = Number(varintOf(f));
    else if (f.field === 8) strings.push(utf8.decode(bytesOf(f)));
  }
  if (dtype !== DT_STRING) throw new Error(`tensor dtype ${dtype}: only DT_STRING (${DT_STRING}) tensors are read`);
  return strings;
}

function decodePluginName(metadata: Uint8Array): string | undefined {
  let name: string | undefined;
  for (const f of decodeFields(metadata)) {
    if (f.field !== 1) continue;
    for (const p of decodeFields(bytesOf(f))) if (p.field === 1) name = utf8.decode(bytesOf(p));
  }
  return name;
}

function decodeValue(buf: Uint8Array): ReadSummaryValue {
  const v: ReadSummaryValue = { tag: "" };
  for (const f of decodeFields(buf)) {
    if (f.field === 1) v.tag = utf8.decode(bytesOf(f));
    else if (f.field === 2) v.simpleValue = readFloat(bytesOf(f));
    else if (f.field === 5) v.histogram = decodeHistogram(bytesOf(f));
    else if (f.field === 8) v.text = decodeTextTensor(bytesOf(f));
    else if (f.field === 9) v.pluginName = decodePluginName(bytesOf(f));
  }
  return v;
}

/** The fields numbered `field` inside an embedded message. */
function inner(f: ProtoField, field: number): ProtoField[] {
  return decodeFields(bytesOf(f)).filter((s) => s.field === field);
}

/** Decodes one serialized tensorflow.Event. */
export function decodeEvent(buf: Uint8Array): TensorBoardEvent {
  const e: TensorBoardEvent = { wallTime: 0, step: 0, values: [] };
  for (const f of decodeFields(buf)) {
    switch (f.field) {
      case 1:
        e.wallTime = readDouble(bytesOf(f));
        break;
      case 2:
        e.step = Number(BigInt.asIntN(64, varintOf(f)));
        break;
      case 3:
        e.fileVersion = utf8.decode(bytesOf(f));
        break;
      case 5:
        for (const s of inner(f, 1)) e.values.push(decodeValue(bytesOf(s)));
        break;
      case 7:
        for (const s of inner(f, 1)) e.sessionStatus = Number(varintOf(s));
        break;
      case 10:
        for (const s of inner(f, 1)) e.writer = utf8.decode(bytesOf(s));
        break;
    }
  }
  return e;
}

/**
 * The events of one event file, checking both CRCs of every record (a mismatch throws). An
 * incomplete last record, left by a process killed mid-write, is skipped as TensorBoard does.
 */
export function readEvents(file: string): TensorBoardEvent[] {
  return parseRecords(readFileSync(file)).records.map(decodeEvent);
}

// Encoders for the tensorflow.Event protobuf TensorBoard reads. Field numbers come from the
// .proto files TensorBoard ships (tensorboard/compat/proto/, copies of TensorFlow's):
//   event.proto      Event { double wall_time = 1; int64 step = 2; oneof what { string file_version = 3;
//                      Summary summary = 5; SessionLog session_log = 7; ... } SourceMetadata source_metadata = 10; }
//                    SourceMetadata { string writer = 1; }   SessionLog { SessionStatus status = 1; } (START = 1)
//   summary.proto    Summary { repeated Value value = 1; }
//                    Summary.Value { string tag = 1; SummaryMetadata metadata = 9;
//                      oneof value { float simple_value = 2; HistogramProto histo = 5; TensorProto tensor = 8; ... } }
//                    SummaryMetadata { PluginData plugin_data = 1; ... }   PluginData { string plugin_name = 1; bytes content = 2; }
//   histogram.proto  HistogramProto { double min = 1; max = 2; num = 3; sum = 4; sum_squares = 5;
//                      repeated double bucket_limit = 6 [packed]; repeated double bucket = 7 [packed]; }
//   tensor.proto     TensorProto { DataType dtype = 1; TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
//   tensor_shape.proto TensorShapeProto { repeated Dim dim = 2; }  (no dims: a scalar)
//   types.proto      DataType DT_STRING = 7
// Fields are written in field-number order and proto3 defaults (0, "", empty repeated) are left
// out, except oneof members, which have presence: that is what protobuf's own serializer emits,
// so an Event re-serialized by Python's protobuf comes out byte-for-byte the same (the Python
// round-trip test checks this).
import { concat, fieldBytes, fieldDouble, fieldFloat, fieldMessage, fieldPackedDoubles, fieldString, fieldVarint } from "./protobuf.js";

/** The version string every event file starts with; readers check its "brain.Event:" prefix. */
export const FILE_VERSION = "brain.Event:2";
/** SessionLog.SessionStatus.START */
export const SESSION_START = 1;
/** types.proto DataType.DT_STRING */
export const DT_STRING = 7;
/** The text plugin's name (tensorboard/plugins/text/metadata.py PLUGIN_NAME). */
export const TEXT_PLUGIN = "text";

/**
 * A HistogramProto. Bucket i counts the values in [bucketLimit[i-1], bucketLimit[i]) (bucket 0
 * from -DBL_MAX); TensorBoard draws the outer edges at min and max.
 */
export interface HistogramData {
  min: number;
  max: number;
  num: number;
  sum: number;
  sumSquares: number;
  bucketLimit: number[];
  bucket: number[];
}

/** One Summary.Value: a scalar (stored as float32), a markdown text, or a histogram. */
export type SummaryValue = { tag: string; simpleValue: number } | { tag: string; text: string } | { tag: string; histogram: HistogramData };

/** proto3 leaves a double out when it is +0 (its bits are all zero; -0 is written). */
function optionalDouble(field: number, v: number): Uint8Array[] {
  return Object.is(v, 0) ? [] : [fieldDouble(field, v)];
}

function optionalStep(step: number): Uint8Array[] {
  if (!Number.isSafeInteger(step)) throw new RangeError(`TensorBoard step must be an integer, got ${step}`);
  return step === 0 ? [] : [fieldVarint(2, step)];
}

function encodeHistogram(h: HistogramData): Uint8Array[] {
  if (h.bucketLimit.length !== h.bucket.length) throw new Error(`histogram: ${h.bucketLimit.length} bucket limits but ${h.bucket.length} buckets`);
  return [
    ...optionalDouble(1, h.min),
    ...optionalDouble(2, h.max),
    ...optionalDouble(3, h.num),
    ...optionalDouble(4, h.sum),
    ...optionalDouble(5, h.sumSquares),
    ...(h.bucketLimit.length > 0 ? [fieldPackedDoubles(6, h.bucketLimit), fieldPackedDoubles(7, h.bucket)] : []),
  ];
}

/** Rank-0 DT_STRING tensor holding the UTF-8 text, as tensorboard's text summary writes it. */
function encodeTextTensor(text: string): Uint8Array[] {
  return [fieldVarint(1, DT_STRING), fieldMessage(2, []), fieldString(8, text)];
}

/**
 * Summary.Value. Text values carry the text plugin's metadata on every record (TensorBoard only
 * needs it on the first of each tag, but a run restarted into a new file must not lose it).
 * The plugin's `content` (a TextPluginData with version 0) serializes to nothing, so it is omitted.
 */
export function encodeSummaryValue(v: SummaryValue): Uint8Array {
  if (v.tag === "") throw new Error("TensorBoard summary tag must not be empty");
  const parts = [fieldString(1, v.tag)];
  if ("simpleValue" in v) parts.push(fieldFloat(2, v.simpleValue));
  else if ("histogram" in v) parts.push(fieldMessage(5, encodeHistogram(v.histogram)));
  else parts.push(fieldMessage(8, encodeTextTensor(v.text)), fieldMessage(9, [fieldMessage(1, [fieldString(1, TEXT_PLUGIN)])]));
  return concat(parts);
}

/** The first event of every file: file_version, plus which program wrote it. */
export function encodeFileVersionEvent(wallTime: number, writer = "pbrl"): Uint8Array {
  return concat([...optionalDouble(1, wallTime), fieldString(3, FILE_VERSION), fieldMessage(10, [fieldString(1, writer)])]);
}

/** An Event holding one Summary with the given values, all at `step`. */
export function encodeSummaryEvent(wallTime: number, step: number, values: readonly SummaryValue[]): Uint8Array {
  return concat([
    ...optionalDouble(1, wallTime),
    ...optionalStep(step),
    fieldMessage(
      5,
      values.map((v) => fieldBytes(1, encodeSummaryValue(v))),
    ),
  ]);
}

/**
 * SessionLog START at `step`: TensorBoard's Python loader (EventAccumulator, purge_orphaned_data)
 * then drops every point at a step >= `step` read before it, i.e. what a crashed run wrote after
 * the checkpoint a resumed run restarts from.
 */
export function encodeSessionStartEvent(wallTime: number, step: number): Uint8Array {
  return concat([...optionalDouble(1, wallTime), ...optionalStep(step), fieldMessage(7, [fieldVarint(1, SESSION_START)])]);
}

// TensorBoard event files for `report_to: tensorboard`: a writer, the encoders it is built on,
// and a reader for tests and tools. No protobuf dependency: see event.ts for the field numbers.
export { crc32c, maskCrc, maskedCrc32c } from "./crc32c.js";
export {
  DT_STRING,
  encodeFileVersionEvent,
  encodeSessionStartEvent,
  encodeSummaryEvent,
  encodeSummaryValue,
  FILE_VERSION,
  SESSION_START,
  TEXT_PLUGIN,
  type HistogramData,
  type SummaryValue,
} from "./event.js";
export { DEFAULT_HISTOGRAM_BINS, histogramOf, type HistogramBins } from "./histogram.js";
export { decodeEvent, readEvents, type ReadSummaryValue, type TensorBoardEvent } from "./reader.js";
export { frameRecord, parseRecords } from "./record.js";
export { eventFileName, TENSORBOARD_SUBDIR, tensorBoardDir, TensorBoardWriter, type TensorBoardWriterOptions } from "./writer.js";

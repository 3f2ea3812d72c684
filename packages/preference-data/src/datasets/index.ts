export { loadDataset, hasDataExtension, type DatasetRequest, type DatasetSource, type LoadDatasetOptions } from "./load-dataset.js";
export { DatasetError, type DatasetErrorCode } from "./errors.js";
export { parseCsv, csvRows, CsvSyntaxError, type CsvRecord } from "./csv.js";
export { readUtf8File, firstInvalidUtf8, describeInvalidUtf8 } from "./utf8-file.js";

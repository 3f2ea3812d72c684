/**
 * Text files the CLI reads (run files) decoded strictly, as datasets are (@pbrl/preference-data):
 * bytes that are not UTF-8 are a usage error naming the file and where.
 */
import { DatasetError, readUtf8File as readStrictUtf8 } from "@pbrl/preference-data";
import { UsageError } from "./io.js";

export { firstInvalidUtf8, describeInvalidUtf8 } from "@pbrl/preference-data";

/** Reads `file` as UTF-8 text (a leading byte-order mark is dropped); `what` names its role in messages ("config file"). */
export function readUtf8File(file: string, what: string): string {
  try {
    return readStrictUtf8(file, what);
  } catch (err) {
    if (err instanceof DatasetError) throw new UsageError(err.message, { cause: err });
    throw err;
  }
}

import { UsageError } from "../io.js";

/**
 * A dataset that cannot be read or fetched (a bad file, a hub id that does not resolve, no
 * network and no cached copy). A UsageError, so the CLI exits with code 2: the message says what
 * to change.
 */
export class DatasetSourceError extends UsageError {
  override name = "DatasetSourceError";
}

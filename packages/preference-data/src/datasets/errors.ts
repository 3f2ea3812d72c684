/**
 * Why a dataset cannot be loaded. `code` says which kind of problem it is, so a program can react
 * to it (the CLI maps every code to its usage error, exit code 2); the message says what to change.
 *  - invalid_request: the request itself is wrong (a split given for a single file, a bad revision name)
 *  - not_found: no such local file or folder
 *  - invalid_file: a data file that cannot be read (not UTF-8, not JSON/CSV/Parquet, an item that is not an object)
 *  - layout: a dataset folder or repository without the subset, split or data files asked for
 *  - hub: the hub's answer is an error or cannot be used (no such dataset, access denied, a malformed answer)
 *  - unavailable: the hub cannot be reached (or HF_HUB_OFFLINE is set) and the cache has no copy
 */
export type DatasetErrorCode = "invalid_request" | "not_found" | "invalid_file" | "layout" | "hub" | "unavailable";

export class DatasetError extends Error {
  override name = "DatasetError";
  constructor(
    readonly code: DatasetErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

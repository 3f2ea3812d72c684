/**
 * The fixtures every package's tests share, imported as "@pbrl/test-fixtures" (tests resolve the
 * workspace's TypeScript sources): tiny Hugging Face checkpoints of each model family with
 * transformers' reference outputs, written by scripts/reference/make_model_fixtures.py into
 * `models/`, and a loopback double of the Hugging Face Hub; and the test set-up and comparisons those tests share
 * (vitest's hooks and expect: import this from test files only).
 */
import * as path from "node:path";

/** The checkpoint folders (tiny-llama, tiny-qwen2, …) and their `<name>.reference.json`. */
export const MODEL_FIXTURES = path.join(import.meta.dirname, "..", "models");
/** The Llama-style checkpoint most tests train and sample with. */
export const TINY_LLAMA = path.join(MODEL_FIXTURES, "tiny-llama");

export {
  addRepo,
  makeFaithful,
  newCommit,
  startHubDouble,
  streamBody,
  type Hostility,
  type HubDouble,
  type HubRepo,
  type RecordedRequest,
} from "./hub-server.js";
export { fileDigests, linksLeaving } from "./file-digests.js";
export { useHubDouble } from "./hub-hooks.js";
export { addonSkipReason, describeEachBackend, setUpDeviceTests, type AddonLoad, type DeviceTests, type TestBackend } from "./backends.js";
export { expectCloseToReference, maxAbsDifference, type HasData, type ReferenceTensor } from "./compare.js";
export {
  commitOf,
  startHub as startDatasetHub,
  type HubOptions as DatasetHubOptions,
  type HubRepo as DatasetHubRepo,
  type HubRevision as DatasetHubRevision,
  type LoopbackHub as DatasetHubDouble,
  type SeenRequest as DatasetHubRequest,
} from "./dataset-hub-server.js";

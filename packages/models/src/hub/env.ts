/**
 * Where the hub and its cache are, read from the environment variables Python's huggingface_hub
 * reads, so one setting serves both.
 */
import * as os from "node:os";
import { timerDelayMs } from "@pbrl/core-tensor";
import * as path from "node:path";

export class ModelSourceError extends Error {
  override name = "ModelSourceError";
}

/**
 * "org/name": the only form pbrl resolves as a hub id (anything else must be a folder). Each part
 * as the hub allows it (huggingface_hub's validate_repo_id): letters, digits, "_", "-" and ".",
 * beginning and ending with a letter, digit or "_", at most 96 characters, no "--" or "..", not
 * ending in ".git". So an id can never name "..", an absolute path or a path separator.
 */
export const HUB_ID = /^(?!.*(?:--|\.\.))(?!.*\.git$)\w(?:[\w.-]{0,94}\w)?\/\w(?:[\w.-]{0,94}\w)?$/;

/** The cache root: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub (as in Python). */
export function hubCacheDir(): string {
  const env = process.env;
  const explicit = env["HF_HUB_CACHE"] || env["HUGGINGFACE_HUB_CACHE"];
  if (explicit) return explicit;
  const home = env["HF_HOME"] || path.join(env["XDG_CACHE_HOME"] || path.join(os.homedir(), ".cache"), "huggingface");
  return path.join(home, "hub");
}

/** HF_ENDPOINT (a mirror, a private hub, a test server) or huggingface.co, without a trailing slash. */
export function hubEndpoint(): string {
  return (process.env["HF_ENDPOINT"] || "https://huggingface.co").replace(/\/+$/, "");
}

/** The access token for downloads: HF_TOKEN, or the older HUGGING_FACE_HUB_TOKEN. */
export function hubToken(): string | undefined {
  return process.env["HF_TOKEN"] || process.env["HUGGING_FACE_HUB_TOKEN"] || undefined;
}

/** HF_HUB_OFFLINE with Python's truthy spellings (1, true, yes, on). */
export function hubOffline(): boolean {
  return ["1", "true", "yes", "on"].includes((process.env["HF_HUB_OFFLINE"] ?? "").trim().toLowerCase());
}

/** What a hub repository holds; the hub's URLs and the cache's folder names say it. */
export type RepoType = "model" | "dataset";

/** The cache folder of one repository: models--org--name, datasets--org--name. */
export function repoCacheDir(id: string, cacheDir = hubCacheDir(), type: RepoType = "model"): string {
  return path.join(cacheDir, `${type}s--${id.split("/").join("--")}`);
}

/**
 * Milliseconds without a byte before a download is dropped: HF_HUB_DOWNLOAD_TIMEOUT seconds, as in
 * Python (default 10). A longer wait than a timer can hold means "wait as long as you can": the longest it can.
 */
export function hubDownloadTimeoutMs(): number {
  const s = Number(process.env["HF_HUB_DOWNLOAD_TIMEOUT"]);
  return Number.isFinite(s) && s > 0 ? timerDelayMs(s) : 10_000;
}

/**
 * Hugging Face hub ids ("org/name") resolved to local checkpoint folders: first the local
 * Hugging Face cache (the layout huggingface_hub uses, so models downloaded by Python are found),
 * then a download into that cache when the network allows. The pieces live in hub/.
 */
import { existsSync } from "node:fs";
import * as path from "node:path";
import { cachedCommit, missingFromSnapshot } from "./hub/cache.js";
import { isSafeRevision } from "./hub/cache-guard.js";
import { HUB_ID, hubCacheDir, hubOffline, ModelSourceError, repoCacheDir } from "./hub/env.js";
import { downloadModel, offlineError, revisionError, type DownloadOptions } from "./hub/snapshot.js";

export { HUB_ID, hubCacheDir, hubDownloadTimeoutMs, hubEndpoint, hubOffline, ModelSourceError, type RepoType } from "./hub/env.js";
export { COMMIT_HASH, isSafeRepoPath, isSafeRevision, outsideCache } from "./hub/cache-guard.js";
export { METADATA_LIMIT, readBodyCapped } from "./hub/http.js";
export { downloadModel, type DownloadOptions } from "./hub/snapshot.js";
export { hubProgressPrinter, onHubProgress, type HubProgress, type HubProgressListener, type ProgressPrinterOptions } from "./hub/progress.js";
export { describeSkipped, HubPushError, pushToHub, type PushOptions, type PushResult, type SkippedPath, type SkipReason } from "./hub/push.js";
export { baseModelFromConfig, modelCard, type ModelCardInput } from "./hub/model-card.js";
export type { RetryPolicy } from "./hub/http.js";

/** The cached snapshot of a revision when it is complete enough to load, else what it lacks. */
async function cachedSnapshot(id: string, revision: string, cacheDir: string): Promise<{ dir: string } | { dir: string | undefined; missing: string[] }> {
  const repo = repoCacheDir(id, cacheDir);
  const commit = await cachedCommit(repo, revision);
  if (commit === undefined) return { dir: undefined, missing: [] };
  const dir = path.join(repo, "snapshots", commit);
  const missing = await missingFromSnapshot(dir);
  return missing.length === 0 ? { dir } : { dir, missing };
}

/**
 * A local folder for a model source: an existing folder as is; a hub id from the cache, or
 * downloaded into it unless HF_HUB_OFFLINE is set. `revision` defaults to "main".
 */
export async function resolveModelDir(source: string, revision = "main", options: Omit<DownloadOptions, "revision"> = {}): Promise<string> {
  if (existsSync(source)) {
    // A checkpoint folder, or a PEFT adapter folder (loaded onto its base model).
    if (!existsSync(path.join(source, "config.json")) && !existsSync(path.join(source, "adapter_config.json")))
      throw new ModelSourceError(`${source} is not a Hugging Face checkpoint folder (no config.json) nor a PEFT adapter folder (no adapter_config.json)`);
    return source;
  }
  if (!HUB_ID.test(source)) {
    throw new ModelSourceError(`model source ${JSON.stringify(source)} is neither an existing folder nor a hub id of the form "org/name"`);
  }
  if (!isSafeRevision(revision)) throw revisionError(revision);
  const cacheDir = options.cacheDir ?? hubCacheDir();
  const cached = await cachedSnapshot(source, revision, cacheDir);
  if (!("missing" in cached)) return cached.dir;
  if (hubOffline()) {
    if (cached.dir !== undefined) {
      throw new ModelSourceError(
        `${source} is only partly in the Hugging Face cache (${cached.dir} lacks ${cached.missing.join(", ")}) and HF_HUB_OFFLINE is set. ` +
          `Unset HF_HUB_OFFLINE on a machine with network access to complete it (the files already there are kept), or pass a local checkpoint folder.`,
      );
    }
    throw offlineError(source, repoCacheDir(source, cacheDir));
  }
  return downloadModel(source, { ...options, revision, cacheDir });
}

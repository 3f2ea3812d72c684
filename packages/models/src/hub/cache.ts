/**
 * The Hugging Face cache layout, exactly as Python's huggingface_hub writes and reads it:
 *   models--org--name/blobs/<etag>                  file contents, named by the hub's ETag
 *   models--org--name/snapshots/<commit>/<path>     relative symlinks into blobs/
 *   models--org--name/refs/<revision>               the commit a branch or tag pointed at
 * so a model fetched by either side is found offline by the other.
 */
import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "@pbrl/core-tensor";
import { COMMIT_HASH, outsideCache } from "./cache-guard.js";
import { ModelSourceError } from "./env.js";

/**
 * The commit a revision names in the cache: refs/<revision> when it holds a commit id, or the
 * revision itself when it is a snapshot's name (a commit, or a revision pbrl named a snapshot by
 * when the server gave no commit). `revision` is a safe one (isSafeRevision).
 */
export async function cachedCommit(repoDir: string, revision: string): Promise<string | undefined> {
  try {
    const commit = (await fs.readFile(path.join(repoDir, "refs", revision), "utf8")).trim();
    return COMMIT_HASH.test(commit) ? commit : undefined;
  } catch {
    // Not a ref we have seen: the revision may itself be a commit hash (or a snapshot pbrl named by revision).
    return existsSync(path.join(repoDir, "snapshots", revision)) ? revision : undefined;
  }
}

/** Throws unless writing `target` stays inside the cache folder `cacheDir` (see outsideCache). */
export async function guardWrite(cacheDir: string, target: string, repo: string): Promise<void> {
  const why = await outsideCache(cacheDir, target);
  if (why !== undefined) throw new ModelSourceError(`${repo}: refusing to write there: ${why}`);
}

export async function writeRef(cacheDir: string, repoDir: string, revision: string, commit: string, repo: string): Promise<void> {
  // Python writes no ref for a revision that is itself the commit.
  if (revision === commit) return;
  const ref = path.join(repoDir, "refs", revision);
  await guardWrite(cacheDir, ref, repo);
  await writeFileAtomic(ref, commit);
}

/**
 * The files a snapshot folder lacks for pbrl to load it: config.json and the safetensors weights
 * (every shard an index names). An empty list: complete. An interrupted download links files one by
 * one, and Python may have fetched only some files, so a config.json alone proves nothing.
 */
export async function missingFromSnapshot(dir: string): Promise<string[]> {
  const missing: string[] = [];
  if (!existsSync(path.join(dir, "config.json"))) missing.push("config.json");
  const index = path.join(dir, "model.safetensors.index.json");
  if (existsSync(index)) {
    let shards: string[];
    try {
      shards = [...new Set(Object.values((JSON.parse(await fs.readFile(index, "utf8")) as { weight_map: Record<string, string> }).weight_map))];
    } catch {
      return [...missing, "model.safetensors.index.json (unreadable)"];
    }
    for (const s of shards) if (!existsSync(path.join(dir, s))) missing.push(s);
  } else if (!existsSync(path.join(dir, "model.safetensors"))) {
    missing.push("model.safetensors");
  }
  return missing;
}

/**
 * Points snapshots/<commit>/<file> at a blob with a relative symlink (what Python creates), or a
 * copy where the filesystem has no symlinks. Replaces a stale link atomically.
 */
export async function linkSnapshotFile(cacheDir: string, blob: string, link: string, repo: string): Promise<void> {
  await guardWrite(cacheDir, link, repo);
  await fs.mkdir(path.dirname(link), { recursive: true });
  const tmp = `${link}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await fs.symlink(path.relative(path.dirname(link), blob), tmp);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw err;
    await fs.copyFile(blob, tmp);
  }
  await fs.rename(tmp, link);
}

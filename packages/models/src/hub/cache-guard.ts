/**
 * What a hub download may write, and where. Names that come from the server or the caller
 * (commits, revisions, file paths, ETags) become parts of paths in the cache, so they are checked
 * against the hub's own rules first; and every path is proven to lie inside the cache, through any
 * symbolic link already on the way, before anything is written there. Model and dataset downloads
 * both write through these checks.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";

/** A full commit id, as the hub's revision API and its X-Repo-Commit header give it. */
export const COMMIT_HASH = /^[0-9a-f]{40}$/;

/** An ETag that may name a blob file: a plain token of at most 128 characters (the hub's are 40 or 64 hex digits). */
export const SAFE_ETAG = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A branch, tag or commit, a path under refs/: parts of letters, digits, "_", "-" and "." ("refs/pr/1"), none of them "." or "..". */
export function isSafeRevision(revision: string): boolean {
  return /^[\w.-]+(\/[\w.-]+)*$/.test(revision) && !revision.split("/").some((p) => p === "." || p === "..");
}

/** A file's path in a repository: relative, "/"-separated, without an empty, "." or ".." part, a backslash or a NUL. */
export function isSafeRepoPath(file: string): boolean {
  return file !== "" && !/[\\\0]/.test(file) && file.split("/").every((p) => p !== "" && p !== "." && p !== "..");
}

/** Links followed before giving up, as the kernel does (ELOOP). */
const MAX_LINKS = 40;

/**
 * Where a write to `start`/`parts` lands: each existing part looked at without following it, each
 * symbolic link replaced by its target (a link to a missing file too, which a write would create),
 * the missing tail kept by name. `lastLink` is the last link followed from inside `within`.
 */
async function landing(start: string, parts: string[], within: string): Promise<{ path: string; lastLink: string | undefined }> {
  let at = start;
  let rest = parts.filter((p) => p !== "");
  let lastLink: string | undefined;
  for (let links = 0; rest.length > 0;) {
    const next = path.join(at, rest[0]!);
    let isLink: boolean;
    try {
      isLink = (await fs.lstat(next)).isSymbolicLink();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return { path: path.join(next, ...rest.slice(1)), lastLink };
      throw err;
    }
    rest = rest.slice(1);
    if (!isLink) {
      at = next;
      continue;
    }
    if (++links > MAX_LINKS) throw new Error(`${next}: too many levels of symbolic links`);
    if (isInside(within, next)) lastLink = next;
    // `at` has no link in it, so ".." in the link's target means what the kernel makes of it.
    const dest = path.resolve(at, await fs.readlink(next));
    at = path.parse(dest).root;
    rest = [...dest.slice(at.length).split(path.sep), ...rest].filter((p) => p !== "");
  }
  return { path: at, lastLink };
}

function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== "" && rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/**
 * Why writing `target` (creating, replacing or appending to it, or a folder on its way) would
 * touch something outside the cache folder `root`, or undefined when it would not: the path itself
 * leads out, or a symbolic link on the way (the target included) does.
 */
export async function outsideCache(root: string, target: string): Promise<string | undefined> {
  if (!isInside(path.resolve(root), path.resolve(target))) return `${target} lies outside the Hugging Face cache ${root}`;
  const absRoot = path.resolve(root);
  const fsRoot = path.parse(absRoot).root;
  const realRoot = (await landing(fsRoot, absRoot.slice(fsRoot.length).split(path.sep), fsRoot)).path;
  const landed = await landing(realRoot, path.relative(absRoot, path.resolve(target)).split(path.sep), realRoot);
  if (isInside(realRoot, landed.path)) return undefined;
  return (
    `${target} leads out of the Hugging Face cache ${root} through ${landed.lastLink !== undefined ? `the symbolic link ${landed.lastLink}` : "a symbolic link"} (to ${landed.path}); ` +
    `pbrl writes downloads only inside the cache: remove the link, or set HF_HUB_CACHE to a folder without links that lead out of it`
  );
}

/**
 * Dataset repositories in the Hugging Face cache, in huggingface_hub's layout, so files that
 * Python's `datasets`/huggingface_hub downloaded are found, and files pbrl downloads are found by them:
 *   {cache}/datasets--org--name/refs/{revision}          the commit a branch or tag pointed to
 *   {cache}/datasets--org--name/trees/{commit}.json      the repository's file list at that commit
 *   {cache}/datasets--org--name/blobs/{etag}             file contents (etag: LFS sha256 or git blob id)
 *   {cache}/datasets--org--name/snapshots/{commit}/{path} links to the blobs
 * where {cache} is HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub. Requests and
 * downloads go through the hub client of @pbrl/models (retries, stall timeout, resumed downloads).
 * Names from the hub are checked before they become paths, every path is proven to lie inside
 * {cache} before it is written, and no answer is read past the size the hub lists (or, for JSON,
 * past METADATA_LIMIT).
 */
import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { writeFileAtomic } from "@pbrl/core-tensor";
import {
  COMMIT_HASH,
  downloadRepoFile,
  hubApiUrl,
  hubRequest,
  isSafeRepoPath,
  isSafeRevision,
  METADATA_LIMIT,
  ModelSourceError,
  outsideCache,
  readBodyCapped,
  type HubClient,
} from "@pbrl/models";
import { DatasetError } from "./errors.js";
import { hubHttpError } from "./hub-http.js";

/** One file of a repository at a commit, as the /tree API and huggingface_hub's trees/{commit}.json give it. */
export interface TreeEntry {
  size: number;
  blob_id: string;
  lfs_sha256?: string;
  lfs_size?: number;
  xet_hash?: string;
}

/** A repository at one commit: its files, and a way to get a local copy of one. */
export interface RepoView {
  commit: string;
  files: string[];
  /** The local path of `file`: from the snapshot, else downloaded; undefined when it is not cached and cannot be downloaded. */
  local(file: string): Promise<string | undefined>;
}

/** Pages of one file list at most: 10 million files at the hub's 1000 a page. */
const MAX_TREE_PAGES = 10_000;
const LIMIT_TEXT = `${METADATA_LIMIT / 2 ** 20} MiB`;

export function checkRevision(revision: string, key: string): void {
  if (!isSafeRevision(revision)) throw new DatasetError("invalid_request", `${key}: ${JSON.stringify(revision)} is not a branch, tag or commit name`);
}

/** Throws unless writing `target` stays inside the cache (see outsideCache). */
async function guardWrite(c: HubClient, target: string, what: string): Promise<void> {
  const why = await outsideCache(c.cacheDir, target);
  if (why !== undefined) throw new DatasetError("hub", `${what}: refusing to write there: ${why}`);
}

const isSize = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;

/** A JSON answer and its length in bytes, read up to `limit` bytes; `subject` names it in errors. */
async function readJson(c: HubClient, res: Response, limit: number, what: string, subject: string): Promise<{ json: unknown; bytes: number }> {
  const body = await readBodyCapped(res, limit);
  if (body === undefined)
    throw new DatasetError(
      "hub",
      `${what}: ${subject} from ${c.endpoint} is larger than ${LIMIT_TEXT}, more than pbrl reads of one hub answer; check HF_ENDPOINT, or, for a dataset with this many files, download the files you need (hf download … --repo-type dataset --include …) and pass their folder`,
    );
  try {
    return { json: JSON.parse(body.toString("utf8")), bytes: body.length };
  } catch (err) {
    throw new DatasetError("hub", `${what}: ${subject} from ${c.endpoint} is not JSON (${(err as Error).message}); is HF_ENDPOINT a Hugging Face hub?`);
  }
}

const fmtBytes = (n: number) =>
  n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${Math.round(n / 1e3)} kB` : `${n} B`;

/** The commit a revision points to on the hub, or undefined when the repository has no such revision and `missingOk`. */
export async function hubCommit(c: HubClient, revision: string, what: string, missingOk = false): Promise<string | undefined> {
  const res = await hubRequest(c, hubApiUrl(c, `revision/${encodeURIComponent(revision)}`));
  if (!res.ok) {
    if (missingOk && res.status === 404 && res.headers.get("x-error-code") === "RevisionNotFound") return undefined;
    throw await hubHttpError(res, what, c, revision);
  }
  const sha = ((await readJson(c, res, METADATA_LIMIT, what, `the answer about revision ${revision}`)).json as { sha?: unknown } | null)?.sha;
  if (typeof sha !== "string" || !COMMIT_HASH.test(sha))
    throw new DatasetError("hub", `${what}: ${c.endpoint} gave no commit for revision ${revision} (sha ${JSON.stringify(sha)})`);
  return sha;
}

interface ApiTreeItem {
  type?: unknown;
  path?: unknown;
  oid?: unknown;
  size?: unknown;
  lfs?: { oid?: unknown; size?: unknown } | null;
  xetHash?: unknown;
}

/**
 * The file list of a commit: from trees/{commit}.json when cached (a commit never changes), else the
 * /tree API, then cached. All its pages together are read up to METADATA_LIMIT bytes, and a listing
 * that links back to a page it already sent is an error, not a loop.
 */
async function treeAt(c: HubClient, commit: string, what: string): Promise<Map<string, TreeEntry>> {
  const cached = await cachedTree(c, commit);
  if (cached !== undefined) return cached;
  const tree = new Map<string, TreeEntry>();
  const subject = `the file list of ${c.id} at ${commit}`;
  const seen = new Set<string>();
  let left = METADATA_LIMIT;
  let url: string | undefined = hubApiUrl(c, `tree/${commit}?recursive=true&expand=false`);
  while (url !== undefined) {
    if (seen.has(url))
      throw new DatasetError(
        "hub",
        `${what}: ${subject} from ${c.endpoint} links back to a page it already sent (${url}), so it would never end; is HF_ENDPOINT a Hugging Face hub?`,
      );
    if (seen.size === MAX_TREE_PAGES)
      throw new DatasetError("hub", `${what}: ${subject} from ${c.endpoint} runs past ${MAX_TREE_PAGES} pages, more than pbrl reads`);
    seen.add(url);
    const res = await hubRequest(c, url);
    if (!res.ok) throw await hubHttpError(res, what, c, commit);
    const page = await readJson(c, res, left, what, subject);
    if (!Array.isArray(page.json))
      throw new DatasetError("hub", `${what}: ${subject} from ${c.endpoint} is not a JSON list; is HF_ENDPOINT a Hugging Face hub?`);
    left -= page.bytes;
    for (const item of page.json as (ApiTreeItem | null)[]) {
      // A number or a string in the list has no type "file" either: only null needs a check of its own.
      if (item === null) continue;
      if (item.type !== "file" || typeof item.path !== "string" || typeof item.oid !== "string" || !isSize(item.size)) continue;
      const e: TreeEntry = { size: item.size, blob_id: item.oid };
      if (item.lfs && typeof item.lfs.oid === "string" && isSize(item.lfs.size)) Object.assign(e, { lfs_sha256: item.lfs.oid, lfs_size: item.lfs.size });
      if (typeof item.xetHash === "string") e.xet_hash = item.xetHash;
      tree.set(item.path, e);
    }
    // Large listings come in pages: Link: <url>; rel="next"
    // Stryker disable next-line StringLiteral: any other text without a <…>; rel="next" matches no more than the empty one
    const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get("link") ?? "")?.[1];
    url = next === undefined ? undefined : new URL(next, url).href;
  }
  const files = Object.fromEntries([...tree.keys()].sort().map((k) => [k, tree.get(k)!]));
  const saved = path.join(c.repoDir, "trees", `${commit}.json`);
  await guardWrite(c, saved, what);
  await writeFileAtomic(saved, JSON.stringify({ format_version: 1, files }, null, 1));
  return tree;
}

async function cachedTree(c: HubClient, commit: string): Promise<Map<string, TreeEntry> | undefined> {
  const saved = path.join(c.repoDir, "trees", `${commit}.json`);
  try {
    // pbrl saves at most METADATA_LIMIT of listing (a little more, indented); a larger file is listed again.
    if ((await fs.stat(saved)).size > 2 * METADATA_LIMIT) return undefined;
    const data = JSON.parse(await fs.readFile(saved, "utf8")) as {
      format_version?: unknown;
      files?: Record<string, TreeEntry>;
    };
    if (data.format_version !== 1 || !(data.files instanceof Object)) return undefined;
    return new Map(Object.entries(data.files));
  } catch {
    // absent or unreadable: list again (or, offline, walk the snapshot)
  }
  return undefined;
}

/**
 * Downloads one file into blobs/ and links it from the snapshot, as hf_hub_download does, through
 * the models' hub client: a dropped or stalled connection (HF_HUB_DOWNLOAD_TIMEOUT) is resumed
 * and retried, the body is never read past the listed size, an LFS file's sha256 is checked.
 */
async function download(c: HubClient, commit: string, file: string, entry: TreeEntry, what: string, log: (line: string) => void): Promise<string> {
  const target = path.join(c.repoDir, "snapshots", commit, file);
  if (existsSync(target)) return target;
  const etag = entry.lfs_sha256 ?? entry.blob_id;
  if (!/^[0-9a-f]{40,64}$/i.test(etag)) throw new DatasetError("hub", `${what}: ${c.endpoint} listed ${file} with an unusable id ${JSON.stringify(etag)}`);
  const size = entry.lfs_size ?? entry.size;
  if (!existsSync(path.join(c.repoDir, "blobs", etag))) log(`pbrl: ${what}: downloading ${file} (${fmtBytes(size)}) from ${c.endpoint}`);
  try {
    return await downloadRepoFile(c, { path: file, etag, size }, commit);
  } catch (err) {
    // The client's messages start with the repository; here the dataset and run key take its place.
    if (err instanceof ModelSourceError) throw new DatasetError("hub", `${what}: ${err.message.replace(`${c.id}: `, "")}`, { cause: err });
    throw err;
  }
}

/** The repository at `commit`, online: listed through the API, files downloaded when not cached; the revision's ref is recorded. */
export async function onlineView(c: HubClient, revision: string, commit: string, what: string, log: (line: string) => void): Promise<RepoView> {
  const tree = await treeAt(c, commit, what);
  if (revision !== commit) {
    const ref = path.join(c.repoDir, "refs", revision);
    await guardWrite(c, ref, what);
    await writeFileAtomic(ref, commit);
  }
  const safe = [...tree.keys()].filter(isSafeRepoPath);
  // Stryker disable next-line MethodExpression: every reader of files sorts what it takes from them (datasetSplits' rules, convertedSplits)
  const files = safe.sort();
  return { commit, files, local: (file) => download(c, commit, file, tree.get(file)!, what, log) };
}

async function walk(dir: string, prefix = ""): Promise<string[]> {
  // Stryker disable next-line ArrayDeclaration: a name without an extension put first is no data file, and no rule or reader takes it
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const rel = prefix + e.name;
    if (e.isDirectory()) out.push(...(await walk(path.join(dir, e.name), `${rel}/`)));
    else out.push(rel);
  }
  return out;
}

/** The cached repository at a revision (a branch, tag or commit), or undefined when the cache has no snapshot of it. */
export async function cachedView(c: HubClient, revision: string): Promise<RepoView | undefined> {
  const root = c.repoDir;
  let commit = revision;
  // Stryker disable next-line ConditionalExpression: no ref is written for a commit hash, so reading refs/{hash} fails and the commit stays the revision
  if (!COMMIT_HASH.test(revision)) {
    try {
      commit = (await fs.readFile(path.join(root, "refs", revision), "utf8")).trim();
    } catch {
      // no ref: the commit stays the revision, which is no commit hash (tested above), so the check below returns undefined
    }
  }
  const snapshot = path.join(root, "snapshots", commit);
  if (!COMMIT_HASH.test(commit) || !existsSync(snapshot)) return undefined;
  // The full listing when pbrl or huggingface_hub >= 1.x saved it, else what the snapshot holds.
  const tree = await cachedTree(c, commit);
  // Stryker disable next-line MethodExpression: every reader of files sorts what it takes from them (datasetSplits' rules, convertedSplits)
  const files = (tree !== undefined ? [...tree.keys()] : await walk(snapshot)).filter(isSafeRepoPath).sort();
  return {
    commit,
    files,
    local: async (file) => {
      const p = path.join(snapshot, file);
      return existsSync(p) ? p : undefined;
    },
  };
}

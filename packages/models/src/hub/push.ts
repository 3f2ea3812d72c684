/**
 * Publishing a checkpoint folder to the hub: the repository is created when missing, every file
 * the folder holds is uploaded in one commit (large ones through the hub's LFS/Xet storage, which
 * @huggingface/hub speaks), and a model card is added when the folder has none. Only what is
 * inside the folder goes up: no symlink leading out of it, no hidden file unless asked.
 */
import { existsSync, promises as fs, statSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { HUB_ID, hubEndpoint, hubOffline, ModelSourceError } from "./env.js";
import { backoffMs, DEFAULT_RETRY, describeNetworkError, sleep, type RetryPolicy } from "./http.js";
import { modelCard } from "./model-card.js";
import { emitProgress, type HubProgressListener } from "./progress.js";

/** Something the user can fix (token, repository name, folder): the CLI exits with code 2. */
export class HubPushError extends ModelSourceError {
  override name = "HubPushError";
}

export interface PushOptions {
  /**
   * The checkpoint folder (what savePretrained wrote). Every file below it is uploaded but hidden
   * ones (see includeHidden), .git and .cache, *.incomplete, and symlinks that lead out of it or
   * loop; PushResult.skipped lists what was left out.
   */
  dir: string;
  /** "org/name" (or "user/name"). */
  repo: string;
  /** A token with write access; default HF_TOKEN. Sent to the hub only, never printed. */
  token?: string;
  /** Create the repository private (an existing repository keeps its visibility). */
  private?: boolean;
  /** Default "Upload model trained with pbrl". */
  commitMessage?: string;
  /** Default HF_ENDPOINT, else https://huggingface.co. */
  hubUrl?: string;
  /** For the generated model card; default config.json's _name_or_path when it is a hub id. */
  baseModel?: string;
  /** Upload hidden files and folders too (.env, .DS_Store, .gitattributes, …); .git and .cache never are. Default false. */
  includeHidden?: boolean;
  onProgress?: HubProgressListener;
  /** Retries of the whole upload after a network error or 429/5xx; default 5, from 1 s doubling. */
  retry?: Partial<RetryPolicy>;
  signal?: AbortSignal;
}

/** Why a path below the folder was not uploaded. */
export type SkipReason = "hidden" | "git-or-cache" | "incomplete" | "link-outside" | "link-loop" | "broken-link" | "not-a-file";

export interface SkippedPath {
  /** Relative to the folder, with "/". */
  path: string;
  reason: SkipReason;
  /** Where a symlink leads (link-outside, link-loop). */
  target?: string;
}

export interface PushResult {
  repo: string;
  /** The repository's page. */
  url: string;
  /** The commit's id, when the hub says it. */
  commit: string | undefined;
  createdRepo: boolean;
  /** Paths uploaded, README.md included. */
  files: string[];
  /** README.md was generated (the folder had none). */
  generatedModelCard: boolean;
  /** What the folder holds that was not uploaded, and why. */
  skipped: SkippedPath[];
}

/** A line for a skipped path: what it is and how to upload it if that is possible. */
export function describeSkipped(s: SkippedPath): string {
  const why: Record<SkipReason, string> = {
    hidden: "hidden (--include-hidden / includeHidden uploads it)",
    "git-or-cache": "git or cache metadata, never uploaded",
    incomplete: "an unfinished download",
    "link-outside": `a symlink to ${s.target}, outside the folder (copy the file in to upload it)`,
    "link-loop": `a symlink to ${s.target}, a folder that holds it (a loop)`,
    "broken-link": "a symlink whose target does not exist",
    "not-a-file": "not a regular file or folder",
  };
  return `${s.path}: ${why[s.reason]}`;
}

// Python's upload_folder leaves these out as well: git internals and huggingface_hub's own metadata.
const SKIP_DIRS = new Set([".git", ".cache"]);

interface Listing {
  /** Relative path -> the real file read for it. */
  files: Map<string, string>;
  skipped: SkippedPath[];
}

const within = (p: string, dirs: readonly string[]) => dirs.some((d) => p === d || p.startsWith(d + path.sep));

/**
 * Where symlinks may lead: the folder itself and, for a snapshot of the Hugging Face cache
 * (<cache>/models--org--name/snapshots/<commit>/…), that repository's blobs folder, which its
 * files link into.
 */
async function linkRoots(realRoot: string): Promise<string[]> {
  for (let a = realRoot; path.dirname(a) !== a; a = path.dirname(a)) {
    const repoCache = path.dirname(path.dirname(a));
    if (path.basename(path.dirname(a)) === "snapshots" && /^models--/.test(path.basename(repoCache))) {
      const blobs = await fs.realpath(path.join(repoCache, "blobs")).catch(() => undefined);
      return blobs === undefined ? [realRoot] : [realRoot, blobs];
    }
  }
  return [realRoot];
}

/**
 * The files to upload, walked without following a symlink that leads out of the folder (nor one
 * into a folder that holds it: a loop); hidden entries only when asked.
 */
async function listFiles(dir: string, includeHidden: boolean): Promise<Listing> {
  const realRoot = await fs.realpath(dir);
  const roots = await linkRoots(realRoot);
  const out: Listing = { files: new Map(), skipped: [] };
  const walk = async (realDir: string, rel: string, ancestors: ReadonlySet<string>): Promise<void> => {
    const entries = (await fs.readdir(realDir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const p = rel === "" ? e.name : `${rel}/${e.name}`;
      const skip = (reason: SkipReason, target?: string) => void out.skipped.push({ path: p, reason, ...(target !== undefined && { target }) });
      if (SKIP_DIRS.has(e.name)) skip("git-or-cache");
      else if (e.name.startsWith(".") && !includeHidden) skip("hidden");
      else {
        let real = path.join(realDir, e.name);
        if (e.isSymbolicLink()) {
          const target = await fs.realpath(real).catch(() => undefined);
          if (target === undefined) {
            skip("broken-link");
            continue;
          }
          if (!within(target, roots)) {
            skip("link-outside", target);
            continue;
          }
          real = target;
        }
        const st = await fs.stat(real);
        if (st.isDirectory()) {
          if (ancestors.has(real)) skip("link-loop", real);
          else await walk(real, p, new Set([...ancestors, real]));
        } else if (!st.isFile()) skip("not-a-file");
        else if (e.name.endsWith(".incomplete")) skip("incomplete");
        else out.files.set(p, real);
      }
    }
  };
  await walk(realRoot, "", new Set([realRoot]));
  return out;
}

/** The folder's config.json as the listing found it (so never a file a link out of the folder leads to). */
async function configJson(listing: Listing): Promise<Record<string, unknown> | undefined> {
  const file = listing.files.get("config.json");
  if (file === undefined) return undefined;
  try {
    return JSON.parse(await fs.readFile(file, "utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

interface HubApiErrorLike {
  statusCode?: number;
  message: string;
}

function isTransient(err: unknown): boolean {
  const status = (err as HubApiErrorLike).statusCode;
  if (typeof status === "number") return status === 429 || status >= 500;
  // fetch's network failures: "fetch failed" (with the socket error as cause), or a body cut short.
  return err instanceof TypeError && (err.cause !== undefined || err.message === "fetch failed" || err.message === "terminated");
}

/** Uploads every file of `dir` to the hub repository `repo` in one commit. */
export async function pushToHub(options: PushOptions): Promise<PushResult> {
  const { dir, repo } = options;
  if (!HUB_ID.test(repo)) {
    throw new HubPushError(
      `--repo must be a hub repository id of the form "org/name", got ${JSON.stringify(repo)}: each part is letters, digits, "_", "-" and ".", begins and ends with a letter, digit or "_", has no ".." or "--", does not end in ".git", and is at most 96 characters`,
    );
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new HubPushError(`${dir} is not a folder; pass the checkpoint folder to upload`);
  const token = options.token ?? (process.env["HF_TOKEN"] || undefined);
  if (token === undefined) {
    throw new HubPushError(`pushing to the hub needs a token with write access: set HF_TOKEN (create one at https://huggingface.co/settings/tokens)`);
  }
  if (hubOffline()) throw new HubPushError(`HF_HUB_OFFLINE is set, so pbrl may not reach the hub; unset it to push ${repo}`);
  const listing = await listFiles(dir, options.includeHidden === true);
  const files = [...listing.files.keys()].sort();
  if (files.length === 0) {
    const left = listing.skipped.length > 0 ? `; left out: ${listing.skipped.map(describeSkipped).join("; ")}` : "";
    throw new HubPushError(`${dir} holds no files to upload${left}`);
  }
  const hubUrl = (options.hubUrl ?? hubEndpoint()).replace(/\/+$/, "");

  const hub = await import("@huggingface/hub");
  const generated = !files.includes("README.md");
  // The card goes up from memory: pushing never changes the user's folder.
  const card = generated ? modelCard({ repo, baseModel: options.baseModel, config: await configJson(listing), files }) : undefined;
  const sizes = new Map(files.map((f) => [f, statSync(listing.files.get(f)!).size]));
  if (card !== undefined) sizes.set("README.md", Buffer.byteLength(card));
  const all = [...sizes.keys()].sort();
  const progress = (file: string, fraction: number, done: boolean) =>
    emitProgress({ direction: "upload", repo, file, bytes: Math.round(fraction * (sizes.get(file) ?? 0)), total: sizes.get(file), done }, options.onProgress);

  const policy = { ...DEFAULT_RETRY, ...options.retry };
  let repoReady = false;
  let createdRepo = false;
  for (let failures = 0; ; failures++) {
    try {
      if (!repoReady) {
        try {
          await hub.createRepo({
            repo: { type: "model", name: repo },
            accessToken: token,
            hubUrl,
            ...(options.private ? { visibility: "private" as const } : {}),
          });
          createdRepo = true;
        } catch (err) {
          if ((err as HubApiErrorLike).statusCode !== 409) throw err; // 409: it exists already
        }
        repoReady = true;
      }
      for (const f of all) progress(f, 0, false);
      const operations = [
        ...files.map((f) => ({ operation: "addOrUpdate" as const, path: f, content: pathToFileURL(listing.files.get(f)!) })),
        ...(card !== undefined ? [{ operation: "addOrUpdate" as const, path: "README.md", content: new Blob([card]) }] : []),
      ];
      const it = hub.commitIter({
        repo: { type: "model", name: repo },
        accessToken: token,
        hubUrl,
        title: options.commitMessage ?? "Upload model trained with pbrl",
        operations,
        ...(options.signal ? { abortSignal: options.signal } : {}),
      });
      let step = await it.next();
      while (!step.done) {
        const e = step.value;
        if (e.event === "fileProgress" && e.state === "uploading") progress(e.path, e.progress, false);
        step = await it.next();
      }
      for (const f of all) progress(f, 1, true);
      return {
        repo,
        url: `${hubUrl}/${repo}`,
        commit: step.value?.commit.oid,
        createdRepo,
        files: all,
        generatedModelCard: generated,
        skipped: listing.skipped,
      };
    } catch (err) {
      const status = (err as HubApiErrorLike).statusCode;
      if (status === 401 || status === 403) {
        throw new HubPushError(
          `the hub refused the upload to ${repo} (HTTP ${status}): ${options.token !== undefined ? "the token" : "HF_TOKEN"} must be a token with write access to ${repo.split("/")[0]}`,
        );
      }
      // A hub never reached (refused, no DNS) is not worth five tries: the machine is likely offline.
      const unreachable = !repoReady && err instanceof TypeError && describeNetworkError(err).unreachable;
      if (!isTransient(err) || unreachable || failures >= policy.retries || options.signal?.aborted) {
        const why = err instanceof TypeError ? describeNetworkError(err).code : (err as Error).message;
        throw new Error(`uploading ${dir} to ${repo} on ${hubUrl} failed${failures > 0 ? ` ${failures + 1} times` : ""}: ${why}`, { cause: err });
      }
      await sleep(backoffMs(failures, policy));
    }
  }
}

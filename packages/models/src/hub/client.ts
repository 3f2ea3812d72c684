/**
 * One client for a hub repository, a model's or a dataset's: its URLs, metadata requests retried
 * on the hub's passing trouble (with a stall timeout), and file downloads into the Hugging Face
 * cache, resumed, retried and checked (download-file.ts). Model snapshots (snapshot.ts) and the
 * dataset loader of @pbrl/preference-data both go through it.
 */
import * as path from "node:path";
import { downloadFile, type TransferContext } from "./download-file.js";
import { hubCacheDir, hubDownloadTimeoutMs, hubEndpoint, hubToken, repoCacheDir, type RepoType } from "./env.js";
import { backoffMs, DEFAULT_RETRY, hubFetch, isTransientStatus, sleep, StallTimer, TransientError, type RetryPolicy } from "./http.js";
import type { HubProgressListener } from "./progress.js";

export interface HubClientOptions {
  /** The hub; default HF_ENDPOINT, else https://huggingface.co. */
  hubUrl?: string;
  /** Default HF_TOKEN (or HUGGING_FACE_HUB_TOKEN). Sent to the hub's own host only. */
  token?: string;
  /** Default HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub. */
  cacheDir?: string;
  /** Retries of a failed request or a dropped download; default 5, from 1 s doubling to 30 s. */
  retry?: Partial<RetryPolicy>;
  /** Milliseconds without a byte before a connection is dropped (and retried); default HF_HUB_DOWNLOAD_TIMEOUT or 10 s. */
  stallTimeoutMs?: number;
  /** Progress per file (the process-wide onHubProgress listeners hear it too). */
  onProgress?: HubProgressListener;
  signal?: AbortSignal;
}

export interface HubClient extends TransferContext {
  type: RepoType;
  /** "org/name" */
  id: string;
  /** The hub's URL, without a trailing slash. */
  endpoint: string;
  /** A response came from the hub: later connection failures are blips to retry, not "offline". */
  contacted: boolean;
}

/** A client for the repository `id` ("org/name", checked by the caller against HUB_ID). */
export function hubClient(type: RepoType, id: string, options: HubClientOptions = {}): HubClient {
  const endpoint = (options.hubUrl ?? hubEndpoint()).replace(/\/+$/, "");
  const cacheDir = options.cacheDir ?? hubCacheDir();
  return {
    type,
    id,
    repo: id,
    endpoint,
    cacheDir,
    repoDir: repoCacheDir(id, cacheDir, type),
    token: options.token ?? hubToken(),
    hubOrigin: new URL(endpoint).origin,
    retry: { ...DEFAULT_RETRY, ...options.retry },
    stallMs: options.stallTimeoutMs ?? hubDownloadTimeoutMs(),
    onProgress: options.onProgress,
    signal: options.signal ?? new AbortController().signal,
    contacted: false,
  };
}

/** An API URL of the repository: {endpoint}/api/{models|datasets}/{id}/{tail}. */
export function hubApiUrl(c: HubClient, tail: string): string {
  return `${c.endpoint}/api/${c.type}s/${c.id}/${tail}`;
}

/** Where a file's bytes are: resolve/{revision}/{path} (under /datasets for a dataset). */
export function hubResolveUrl(c: HubClient, revision: string, file: string): string {
  const prefix = c.type === "dataset" ? "/datasets" : "";
  return `${c.endpoint}${prefix}/${c.id}/resolve/${encodeURIComponent(revision)}/${file.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * The hub could not be asked: a connection that could not be opened (`unreachable`: the machine
 * may be offline), or dropped, stalled or answered 429/5xx on every try. A cached copy may stand in.
 */
export class HubUnreachableError extends Error {
  override name = "HubUnreachableError";
  constructor(
    message: string,
    readonly unreachable: boolean,
  ) {
    super(message);
  }
}

/**
 * A metadata request (the hub's own origin; redirects elsewhere are returned, not followed),
 * retried with backoff on the hub's passing trouble; fails at once when the hub was never reached.
 * Any answer but 429/5xx is returned for the caller to judge.
 */
export async function hubRequest(c: HubClient, url: string, method: "GET" | "HEAD" = "GET"): Promise<Response> {
  for (let failures = 0; ; failures++) {
    const stall = new StallTimer(c.stallMs, c.signal);
    try {
      const res = await hubFetch(url, {
        method,
        token: c.token,
        hubOrigin: c.hubOrigin,
        headers: { "accept-encoding": "identity" },
        followCrossOrigin: false,
        signal: stall.signal,
      });
      c.contacted = true;
      if (!isTransientStatus(res.status)) return res;
      await res.body?.cancel();
      throw new TransientError(`HTTP ${res.status}`);
    } catch (err) {
      if (!(err instanceof TransientError)) throw err;
      if ((err.unreachable && !c.contacted) || failures >= c.retry.retries) {
        throw new HubUnreachableError(`${err.message}${failures > 0 ? `, ${failures + 1} tries` : ""}`, err.unreachable);
      }
      await sleep(backoffMs(failures, c.retry));
    } finally {
      stall.stop();
    }
  }
}

/** A file the repository lists: its path, its blob's name in the cache (LFS sha256 or git blob id) and its size. */
export interface ListedFile {
  path: string;
  etag: string;
  size: number;
}

/**
 * Downloads one file of `commit` into the cache (blobs/, linked from snapshots/{commit}/) unless
 * its blob is there, and returns its path in the snapshot. Quiet: no progress events.
 */
export async function downloadRepoFile(c: HubClient, file: ListedFile, commit: string): Promise<string> {
  const snapshot = path.join(c.repoDir, "snapshots", commit);
  await downloadFile({ ...c, silent: true }, { ...file, url: hubResolveUrl(c, commit, file.path) }, snapshot, commit);
  return path.join(snapshot, file.path);
}

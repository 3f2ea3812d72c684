/**
 * A model repository's files that pbrl loads, downloaded into the Hugging Face cache: config,
 * tokenizer and generation files, and the safetensors weights (every shard of an index), all from
 * one commit. Other files (PyTorch .bin, ONNX, TF weights) are not fetched.
 */
import { promises as fs } from "node:fs";
import * as path from "node:path";
import { writeRef } from "./cache.js";
import { COMMIT_HASH, isSafeRepoPath, isSafeRevision, SAFE_ETAG } from "./cache-guard.js";
import { authHint, downloadFile, type RemoteFile } from "./download-file.js";
import { hubApiUrl, hubClient, HubUnreachableError, hubRequest, hubResolveUrl, type HubClient, type HubClientOptions } from "./client.js";
import { HUB_ID, hubCacheDir, hubEndpoint, hubOffline, ModelSourceError, repoCacheDir } from "./env.js";
import { METADATA_LIMIT, readBodyCapped } from "./http.js";
import { emitProgress } from "./progress.js";

export interface DownloadOptions extends HubClientOptions {
  /** Branch, tag or commit; default "main". */
  revision?: string;
  /** Files downloaded at once; default 4. */
  concurrency?: number;
}

const CONFIG = "config.json";
const EXTRAS = ["generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"];
const INDEX = "model.safetensors.index.json";
const SINGLE = "model.safetensors";

type Session = HubClient;

/** Concurrent calls for one repository and revision in this process share one download. */
const running = new Map<string, Promise<string>>();

/**
 * Downloads (or completes) a model's snapshot in the cache and returns its folder,
 * models--org--name/snapshots/<commit>. Blobs already cached are not fetched again.
 */
export function downloadModel(id: string, options: DownloadOptions = {}): Promise<string> {
  if (!HUB_ID.test(id)) return Promise.reject(new ModelSourceError(`${JSON.stringify(id)} is not a hub id of the form "org/name"`));
  const revision = options.revision ?? "main";
  if (!isSafeRevision(revision)) return Promise.reject(revisionError(revision));
  const cacheDir = options.cacheDir ?? hubCacheDir();
  if (hubOffline()) return Promise.reject(offlineError(id, repoCacheDir(id, cacheDir)));
  const key = `${cacheDir}\0${options.hubUrl ?? hubEndpoint()}\0${id}\0${revision}`;
  let job = running.get(key);
  if (job === undefined) {
    job = download(id, revision, cacheDir, options).finally(() => running.delete(key));
    running.set(key, job);
  }
  return job;
}

/** A revision that cannot be a branch, tag or commit name (it becomes a path under refs/ and snapshots/). */
export function revisionError(revision: string): ModelSourceError {
  return new ModelSourceError(
    `revision ${JSON.stringify(revision)} is not a branch, tag or commit name: give one like "main", "v1.0", "refs/pr/1" or a 40-digit commit id`,
  );
}

export function offlineError(id: string, repoDir: string): ModelSourceError {
  return new ModelSourceError(
    `${id} is not in the Hugging Face cache (${repoDir}) and HF_HUB_OFFLINE is set, so pbrl may not download it. ` +
      `Unset HF_HUB_OFFLINE on a machine with network access (or run \`hf download ${id}\` there with the same HF_HUB_CACHE/HF_HOME), or pass a local checkpoint folder.`,
  );
}

async function download(id: string, revision: string, cacheDir: string, options: DownloadOptions): Promise<string> {
  const stopAll = new AbortController();
  const s: Session = hubClient("model", id, {
    ...options,
    cacheDir,
    // A failed file stops the others: no transfer goes on writing after downloadModel has failed.
    signal: options.signal !== undefined ? AbortSignal.any([options.signal, stopAll.signal]) : stopAll.signal,
  });
  // The revision's commit and file list pin every file to one commit; a server without this API
  // (a plain mirror) still works: the first file's X-Repo-Commit pins the rest.
  const width = Math.max(1, options.concurrency ?? 4);
  const info = await revisionInfo(s, revision);
  let commit = info?.commit ?? (COMMIT_HASH.test(revision) ? revision : undefined);
  const listed = (file: string) => info?.files === undefined || info.files.has(file);
  const head = async (file: string): Promise<RemoteFile | undefined> => {
    if (!listed(file)) return undefined;
    const r = await fileMeta(s, commit ?? revision, file);
    if (r?.commit !== undefined) commit ??= r.commit;
    return r?.file;
  };

  const config = await head(CONFIG);
  if (config === undefined) {
    throw new ModelSourceError(`${id}: the hub has no ${CONFIG} at revision ${revision}; is it a causal LM repository (and is the name right)?`);
  }
  // config.json pinned the commit: the other HEADs go out together.
  const [extras, [index, single]] = await Promise.all([mapPool(EXTRAS, width, head, stopAll), mapPool([INDEX, SINGLE], width, head, stopAll)]);
  const plan: RemoteFile[] = [config, ...extras.filter((m): m is RemoteFile => m !== undefined)];
  // No commit from the server at all (a plain file server): the snapshot is named by the revision, a safe name.
  const snapshotId = commit ?? revision;
  const snapshot = path.join(s.repoDir, "snapshots", snapshotId);
  if (index !== undefined) {
    // The index names the shards: fetch it first (quietly: progress starts once the plan is whole).
    await downloadFile({ ...s, silent: true }, index, snapshot, snapshotId);
    plan.push(index);
    let shards: string[];
    try {
      shards = [
        ...new Set(Object.values((JSON.parse(await fs.readFile(path.join(snapshot, INDEX), "utf8")) as { weight_map: Record<string, string> }).weight_map)),
      ];
    } catch (err) {
      throw new ModelSourceError(`${id}: ${INDEX} is not a safetensors index (${(err as Error).message})`);
    }
    // The index comes from the repository: a shard name must not lead out of the snapshot folder.
    const unsafe = shards.find((shard) => typeof shard !== "string" || !isSafeRepoPath(shard));
    if (unsafe !== undefined) throw new ModelSourceError(`${id}: ${INDEX} names ${JSON.stringify(unsafe)}, which is not a file path inside the repository`);
    const metas = await mapPool(shards, width, head, stopAll);
    metas.forEach((m, i) => {
      if (m === undefined) throw new ModelSourceError(`${id}: ${INDEX} names ${shards[i]}, which the hub does not have at revision ${revision}`);
      plan.push(m);
    });
  } else {
    if (single === undefined) throw new ModelSourceError(`${id}: the hub has no safetensors weights (${SINGLE} or ${INDEX}); pbrl does not read .bin weights`);
    plan.push(single);
  }
  // Announce every file first, so progress shows the whole download's size.
  for (const f of plan) emitProgress({ direction: "download", repo: id, file: f.path, bytes: 0, total: f.size, done: false }, s.onProgress);
  if (index !== undefined) emitProgress({ direction: "download", repo: id, file: INDEX, bytes: index.size ?? 0, total: index.size, done: true }, s.onProgress);
  await mapPool(
    plan.filter((f) => f !== index),
    width,
    (f) => downloadFile(s, f, snapshot, snapshotId),
    stopAll,
  );
  await writeRef(s.cacheDir, s.repoDir, revision, snapshotId, id);
  return snapshot;
}

/**
 * `work` on every item, `width` at a time, results in order. The first failure stops the rest
 * (no new items; `stop` aborts those in flight) and is thrown once every lane has settled.
 */
async function mapPool<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>, stop: AbortController): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const i = next++;
      try {
        out[i] = await work(items[i]!);
      } catch (err) {
        if (failure === undefined) {
          failure = { err };
          stop.abort(err);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane));
  if (failure !== undefined) throw failure.err;
  return out;
}

/** A metadata request, retried on the hub's passing trouble; fails fast when the hub was never reached. */
async function metaRequest(s: Session, url: string, method: "GET" | "HEAD"): Promise<Response> {
  try {
    return await hubRequest(s, url, method);
  } catch (err) {
    if (!(err instanceof HubUnreachableError)) throw err;
    throw new ModelSourceError(
      `cannot download ${s.id} from ${s.endpoint} (${err.message}); the machine may be offline. ` +
        `Pass a local checkpoint folder instead, or put the model in the Hugging Face cache (${s.repoDir}) on a machine with network access.`,
    );
  }
}

async function revisionInfo(s: Session, revision: string): Promise<{ commit: string | undefined; files: Set<string> | undefined } | undefined> {
  const res = await metaRequest(s, hubApiUrl(s, `revision/${encodeURIComponent(revision)}`), "GET");
  if (!res.ok) {
    // No such API (a plain mirror), or a repository this token may not list: the file requests say which.
    await res.body?.cancel();
    return undefined;
  }
  const body = await readBodyCapped(res, METADATA_LIMIT);
  if (body === undefined)
    throw new ModelSourceError(
      `${s.id}: ${s.endpoint}'s answer about revision ${revision} is larger than ${METADATA_LIMIT / 2 ** 20} MiB; is HF_ENDPOINT a Hugging Face hub?`,
    );
  try {
    const json = JSON.parse(body.toString("utf8")) as { sha?: unknown; siblings?: { rfilename?: unknown }[] };
    const commit = typeof json.sha === "string" && COMMIT_HASH.test(json.sha) ? json.sha : undefined;
    const files = Array.isArray(json.siblings) ? new Set(json.siblings.map((f) => f.rfilename).filter((f): f is string => typeof f === "string")) : undefined;
    return { commit, files };
  } catch {
    return undefined;
  }
}

/** HEAD resolve/<rev>/<file> without following the hub's redirect to its CDN, whose headers carry the LFS etag and size. */
async function fileMeta(s: Session, revision: string, file: string): Promise<{ file: RemoteFile; commit: string | undefined } | undefined> {
  const res = await metaRequest(s, hubResolveUrl(s, revision, file), "HEAD");
  await res.body?.cancel();
  if (res.status === 404) return undefined;
  const redirected = res.status >= 300 && res.status < 400;
  if (!res.ok && !redirected) throw new ModelSourceError(`${s.id}: the hub answered HTTP ${res.status} for ${file}${authHint(res.status)}`);
  const h = res.headers;
  const commit = h.get("x-repo-commit") ?? undefined;
  // The commit names the snapshot folder: the hub always sends a full commit id, and anything else is refused.
  if (commit !== undefined && !COMMIT_HASH.test(commit)) {
    throw new ModelSourceError(
      `${s.id}: ${s.endpoint} sent X-Repo-Commit ${JSON.stringify(commit.slice(0, 100))} for ${file}, which is not a commit id (40 hex digits); ` +
        `pbrl names cache folders by it, so it downloads nothing from this server. Check HF_ENDPOINT: it must be a Hugging Face hub or a faithful mirror`,
    );
  }
  const raw = (h.get("x-linked-etag") ?? h.get("etag") ?? undefined)?.replace(/^W\//, "").replace(/"/g, "");
  // The ETag names the blob file: one that is not a plain token is not used (the blob is then named by its sha256).
  const etag = raw !== undefined && SAFE_ETAG.test(raw) ? raw : undefined;
  const sizeText = h.get("x-linked-size") ?? (redirected ? null : h.get("content-length"));
  const size = sizeText !== null && /^\d+$/.test(sizeText) && Number.isSafeInteger(Number(sizeText)) ? Number(sizeText) : undefined;
  return { file: { path: file, url: hubResolveUrl(s, commit ?? revision, file), etag, size }, commit };
}

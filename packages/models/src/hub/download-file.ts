/**
 * One file from the hub into the cache: streamed to blobs/<etag>.incomplete (never held in
 * memory), resumed with a Range request from the bytes already there after a dropped connection
 * or in a later run, retried with backoff, checked against its size and (for LFS files, whose
 * ETag is the content's sha256) its hash, then renamed to blobs/<etag> and linked into the snapshot.
 * A body is never read past the size the hub lists (or, unlisted, past a cap), and every path is
 * proven to lie inside the cache before it is written.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, promises as fs, type WriteStream } from "node:fs";
import { once } from "node:events";
import * as path from "node:path";
import { guardWrite, linkSnapshotFile } from "./cache.js";
import { ModelSourceError } from "./env.js";
import { backoffMs, hubFetch, isTransientStatus, METADATA_LIMIT, sleep, StallTimer, TransientError, type RetryPolicy } from "./http.js";
import { emitProgress, type HubProgressListener } from "./progress.js";

/** What a HEAD on resolve/<commit>/<file> said about a file. */
export interface RemoteFile {
  path: string;
  /** resolve/<commit or revision>/<path> on the hub. */
  url: string;
  /** X-Linked-Etag or ETag, without quotes: the blob's name in the cache. */
  etag: string | undefined;
  size: number | undefined;
}

export interface TransferContext {
  repo: string;
  /** The cache folder (HF_HUB_CACHE): nothing is written outside it. */
  cacheDir: string;
  repoDir: string;
  token: string | undefined;
  hubOrigin: string;
  retry: RetryPolicy;
  stallMs: number;
  onProgress: HubProgressListener | undefined;
  /** No progress events (a small file fetched to plan the rest). */
  silent?: boolean;
  signal: AbortSignal;
}

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * The most read of a file whose size the hub does not list: weights up to the hub's own limit on
 * one file (50 GB), anything else (config, tokenizer, index, template) up to METADATA_LIMIT.
 */
const UNLISTED_WEIGHTS_LIMIT = 50e9;

function sizeLimit(file: RemoteFile): number {
  return file.size ?? (file.path.endsWith(".safetensors") ? UNLISTED_WEIGHTS_LIMIT : METADATA_LIMIT);
}

function tooLong(ctx: TransferContext, file: RemoteFile): ModelSourceError {
  const limit =
    file.size !== undefined
      ? `the ${file.size} bytes the hub lists`
      : `${sizeLimit(file)} bytes, the most pbrl reads of a file whose size the hub does not list`;
  return new ModelSourceError(
    `${ctx.repo}: ${file.path} from ${ctx.hubOrigin} is longer than ${limit}; pbrl stopped reading it and kept none of it. The mirror or proxy there may be serving other bytes`,
  );
}

/** Two downloads of one blob in this process (two agents from one model) share one transfer. */
const inFlight = new Map<string, Promise<string>>();

export async function downloadFile(ctx: TransferContext, file: RemoteFile, snapshotDir: string, commitKey: string): Promise<void> {
  const blobs = path.join(ctx.repoDir, "blobs");
  // Without an ETag (a plain file server) the blob is named by its sha256 once downloaded; the
  // partial file is named by commit and path so a later run still resumes it.
  const partialName = file.etag ?? `pbrl-${createHash("sha256").update(`${commitKey}/${file.path}`).digest("hex").slice(0, 32)}`;
  const key = path.join(blobs, partialName);
  let job = inFlight.get(key);
  if (job === undefined) {
    job = fetchBlob(ctx, file, blobs, partialName).finally(() => inFlight.delete(key));
    inFlight.set(key, job);
  }
  const blob = await job;
  await linkSnapshotFile(ctx.cacheDir, blob, path.join(snapshotDir, file.path), ctx.repo);
}

async function fetchBlob(ctx: TransferContext, file: RemoteFile, blobs: string, partialName: string): Promise<string> {
  const progress = (bytes: number, done: boolean) =>
    ctx.silent || emitProgress({ direction: "download", repo: ctx.repo, file: file.path, bytes, total: file.size, done }, ctx.onProgress);
  if (file.etag !== undefined && existsSync(path.join(blobs, file.etag))) {
    progress(file.size ?? (await fs.stat(path.join(blobs, file.etag))).size, true);
    return path.join(blobs, file.etag);
  }
  const incomplete = path.join(blobs, `${partialName}.incomplete`);
  // The partial file, and so blobs/ on its way, must land inside the cache (the blob's own name is checked before the rename).
  await guardWrite(ctx.cacheDir, incomplete, ctx.repo);
  await fs.mkdir(blobs, { recursive: true });
  const expectSha = file.etag !== undefined && SHA256.test(file.etag) ? file.etag : undefined;
  const wantSha = expectSha !== undefined || file.etag === undefined;
  let failures = 0;
  let restartedForHash = false;
  for (;;) {
    const have = await sizeOf(incomplete);
    let got = have;
    try {
      const sha = await attempt(ctx, file, incomplete, have, wantSha, (n) => {
        if (n > got) failures = 0; // progress: the network works, only this connection failed
        got = n;
        progress(n, false);
      });
      if (expectSha !== undefined && sha !== expectSha) {
        await fs.rm(incomplete, { force: true });
        if (restartedForHash)
          throw new ModelSourceError(
            `${ctx.repo}: ${file.path} downloaded twice with sha256 ${sha}, not ${expectSha} as the hub says; the mirror or proxy at ${ctx.hubOrigin} may be serving other bytes`,
          );
        restartedForHash = true; // a resumed prefix from another version of the file: start over once
        continue;
      }
      const blob = path.join(blobs, file.etag ?? sha!);
      await guardWrite(ctx.cacheDir, blob, ctx.repo);
      await fs.rename(incomplete, blob);
      progress(file.size ?? got, true);
      return blob;
    } catch (err) {
      if (!(err instanceof TransientError) || ctx.signal.aborted) throw err;
      if (failures >= ctx.retry.retries) {
        throw new ModelSourceError(
          `downloading ${file.path} of ${ctx.repo} failed ${failures + 1} times (last: ${err.message}); ${formatGot(got, file.size)} are kept in ${incomplete} and the next try resumes from there`,
        );
      }
      await sleep(backoffMs(failures, ctx.retry));
      failures++;
    }
  }
}

function formatGot(got: number, size: number | undefined): string {
  return size !== undefined ? `${got} of ${size} bytes` : `${got} bytes`;
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await fs.stat(file)).size;
  } catch {
    return 0;
  }
}

/**
 * One GET from `have` bytes on; returns the sha256 of the whole file when asked. Bytes written
 * before a failure stay in the .incomplete file for the next attempt.
 */
async function attempt(
  ctx: TransferContext,
  file: RemoteFile,
  incomplete: string,
  have: number,
  wantSha: boolean,
  onBytes: (n: number) => void,
): Promise<string | undefined> {
  const limit = sizeLimit(file);
  if (have > limit) {
    await fs.rm(incomplete, { force: true });
    have = 0;
  }
  const stall = new StallTimer(ctx.stallMs, ctx.signal);
  try {
    const headers: Record<string, string> = { "accept-encoding": "identity" };
    if (have > 0) headers["range"] = `bytes=${have}-`;
    const res = await hubFetch(file.url, { method: "GET", token: ctx.token, hubOrigin: ctx.hubOrigin, headers, followCrossOrigin: true, signal: stall.signal });
    if (res.status === 416 && have > 0) {
      // Nothing after `have`: the partial file is already whole, or from another version; start over.
      await res.body?.cancel();
      await fs.rm(incomplete, { force: true });
      throw new TransientError("the server refused the resume range");
    }
    if (!res.ok) {
      await res.body?.cancel();
      if (isTransientStatus(res.status)) throw new TransientError(`HTTP ${res.status}`);
      throw new ModelSourceError(`downloading ${file.path} of ${ctx.repo} failed with HTTP ${res.status}${authHint(res.status)}`);
    }
    // 206 continues from `have`; a 200 (the server ignored Range) sends the whole file again.
    let start = 0;
    if (res.status === 206) {
      start = Number(/^bytes (\d+)-/.exec(res.headers.get("content-range") ?? "")?.[1] ?? NaN);
      if (start !== have) {
        await res.body?.cancel();
        await fs.rm(incomplete, { force: true });
        throw new TransientError(`the server resumed at byte ${start}, not ${have}`);
      }
    }
    const hash = wantSha ? createHash("sha256") : undefined;
    if (hash !== undefined && start > 0) await hashPrefix(incomplete, start, hash);
    const out = createWriteStream(incomplete, { flags: start > 0 ? "a" : "w" });
    let bytes = start;
    try {
      if (res.body === null) throw new TransientError("empty response");
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        stall.touch();
        if (bytes + chunk.length > limit) {
          // More than the hub lists (or a compressed body inflating past it): none of it is kept.
          await closeStream(out);
          await fs.rm(incomplete, { force: true });
          throw tooLong(ctx, file);
        }
        hash?.update(chunk);
        if (!out.write(chunk)) await once(out, "drain");
        bytes += chunk.length;
        onBytes(bytes);
      }
    } catch (err) {
      if (err instanceof ModelSourceError || err instanceof TransientError) throw err;
      if ((err as NodeJS.ErrnoException).syscall !== undefined) throw err; // the disk (full, read-only), not the network
      if (stall.signal.reason instanceof TransientError) throw stall.signal.reason;
      if (ctx.signal.aborted) throw err;
      throw new TransientError(`the connection dropped after ${bytes} bytes (${(err as Error).message})`);
    } finally {
      await closeStream(out);
    }
    if (file.size !== undefined && bytes !== file.size) throw new TransientError(`got ${bytes} of ${file.size} bytes`);
    return hash?.digest("hex");
  } finally {
    stall.stop();
  }
}

async function hashPrefix(file: string, n: number, hash: Hash): Promise<void> {
  for await (const chunk of createReadStream(file, { start: 0, end: n - 1 })) hash.update(chunk as Buffer);
}

async function closeStream(out: WriteStream): Promise<void> {
  if (out.closed) return;
  out.end();
  await once(out, "close").catch(() => undefined);
}

export function authHint(status: number): string {
  return status === 401 || status === 403 ? " (a gated or private model: set HF_TOKEN to a token that may read it)" : "";
}

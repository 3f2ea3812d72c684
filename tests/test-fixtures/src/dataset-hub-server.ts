// A loopback stand-in for the Hugging Face Hub, speaking the part of its API that dataset
// downloads use: /api/datasets/{id}/revision/{rev} (the commit), /api/datasets/{id}/tree/{commit}
// (the file list, in pages linked by a Link header), and /datasets/{id}/resolve/{commit}/{path}
// (the bytes; LFS files redirect to a second server, as the hub redirects to its CDN). Options
// make it misbehave as a hostile or broken hub can: see HubOptions.
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { streamBody } from "./hub-server.js";

export interface HubRevision {
  sha: string;
  files: Record<string, Uint8Array | string>;
}

export interface HubRepo {
  id: string;
  /** Branch and tag names to their commit; refs/convert/parquet for the Parquet conversion. */
  revisions: Record<string, HubRevision>;
  /** A gated dataset: every request without the token "Bearer good-token" gets 403. */
  gated?: boolean;
}

export interface SeenRequest {
  server: "hub" | "cdn";
  path: string;
  authorization: string | undefined;
}

export interface LoopbackHub {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

const bytes = (b: Uint8Array | string) => (typeof b === "string" ? new TextEncoder().encode(b) : b);
const gitBlobId = (b: Uint8Array) => createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
// As on the hub, binary data files live in LFS (their etag is a sha256); small text files in git.
const isLfs = (file: string) => file.endsWith(".parquet");

export const commitOf = (seed: string): string => createHash("sha1").update(seed).digest("hex");

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

export interface HubOptions {
  /** Entries per page of a tree listing (default 1000). */
  pageSize?: number;
  /** The CDN sends headers and half a file, then nothing. */
  stallCdn?: boolean;
  /** As stallCdn, for the CDN's first answer only. */
  stallCdnOnce?: boolean;
  /** The CDN waits this long before it answers (a slow link, shorter than any sane HF_HUB_DOWNLOAD_TIMEOUT). */
  cdnDelayMs?: number;
  /** Every tree page links (rel="next") to itself. */
  selfLinkedTree?: boolean;
  /** Every tree page is empty and links (rel="next") to a page of its own: a listing without end. */
  endlessTree?: boolean;
  /** Spaces put before each tree page's JSON, making it this many bytes larger. */
  treePadding?: number;
  /** Zero bytes sent after a file's content (by path), while the tree lists its true size. */
  overlong?: Record<string, number>;
  /** Files sent gzip-compressed (Content-Encoding: gzip), whatever the request accepts. */
  gzip?: string[];
}

/** Sends a file as `options` says: as it is, with its length (half of it when `stall`), or padded and compressed, chunked. */
function sendFile(res: ServerResponse, body: Uint8Array, file: string, headers: Record<string, string>, options: HubOptions, stall = false): void {
  const extra = options.overlong?.[file] ?? 0;
  const gzip = options.gzip?.includes(file) ?? false;
  if (extra === 0 && !gzip) {
    res.writeHead(200, { ...headers, "content-length": String(body.length) });
    if (stall) res.write(body.subarray(0, body.length >> 1));
    else res.end(body);
    return;
  }
  res.writeHead(200, { ...headers, ...(gzip ? { "content-encoding": "gzip" } : {}) });
  streamBody(res, body, extra, gzip);
}

export async function startHub(repos: HubRepo[], options: HubOptions = {}): Promise<LoopbackHub> {
  const requests: SeenRequest[] = [];
  const blobs = new Map<string, { body: Uint8Array; file: string }>();
  const pageSize = options.pageSize ?? 1000;
  let cdnAnswers = 0;
  const cdn = createServer((req, res) => {
    requests.push({ server: "cdn", path: req.url ?? "", authorization: req.headers.authorization });
    const blob = blobs.get((req.url ?? "").replace(/^\/blob\//, ""));
    if (blob === undefined) return json(res, 404, { error: "no such blob" });
    const stall = options.stallCdn === true || (options.stallCdnOnce === true && cdnAnswers === 0);
    cdnAnswers++;
    setTimeout(() => sendFile(res, blob.body, blob.file, {}, options, stall), options.cdnDelayMs ?? 0);
  });
  const cdnUrl = await listen(cdn);
  const hub = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push({ server: "hub", path: url.pathname + url.search, authorization: req.headers.authorization });
    const m = /^\/(?:api\/)?datasets\/([^/]+\/[^/]+)\/(revision|tree|resolve)\/([^/]+)(?:\/(.*))?$/.exec(url.pathname);
    const repo = m ? repos.find((r) => r.id === m[1]) : undefined;
    if (!m || !repo) return json(res, 401, { error: "Repository not found" }, { "x-error-code": "RepoNotFound" });
    if (repo.gated && req.headers.authorization !== "Bearer good-token")
      return json(res, 403, { error: "Access to dataset is restricted" }, { "x-error-code": "GatedRepo" });
    const rev = decodeURIComponent(m[3]!);
    const at = repo.revisions[rev] ?? Object.values(repo.revisions).find((r) => r.sha === rev);
    if (at === undefined) return json(res, 404, { error: `Revision Not Found for url ${req.url}` }, { "x-error-code": "RevisionNotFound" });
    const names = Object.keys(at.files).sort();
    if (m[2] === "revision") return json(res, 200, { id: repo.id, sha: at.sha, siblings: names.map((rfilename) => ({ rfilename })) });
    if (m[2] === "tree") {
      const dirs = [
        ...new Set(
          names.flatMap((n) =>
            n
              .split("/")
              .slice(0, -1)
              .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
          ),
        ),
      ];
      const entries = [
        ...dirs.map((p) => ({ type: "directory", oid: commitOf(p), size: 0, path: p })),
        ...names.map((p) => {
          const b = bytes(at.files[p]!);
          return {
            type: "file",
            oid: gitBlobId(b),
            size: isLfs(p) ? 134 : b.length,
            path: p,
            ...(isLfs(p) ? { lfs: { oid: sha256(b), size: b.length, pointerSize: 134 } } : {}),
          };
        }),
      ];
      const cursor = Number(url.searchParams.get("cursor") ?? "0");
      if (options.endlessTree) {
        res.writeHead(200, { "content-type": "application/json", link: `<${url.pathname}?recursive=true&expand=false&cursor=${cursor + 1}>; rel="next"` });
        return res.end("[]");
      }
      const next = options.selfLinkedTree
        ? `<${url.pathname}${url.search}>; rel="next"`
        : cursor + pageSize < entries.length
          ? `<${url.pathname}?recursive=true&expand=false&cursor=${cursor + pageSize}>; rel="next"`
          : undefined;
      const page = JSON.stringify(entries.slice(cursor, cursor + pageSize));
      res.writeHead(200, { "content-type": "application/json", ...(next ? { link: next } : {}) });
      return res.end(" ".repeat(options.treePadding ?? 0) + page);
    }
    const file = decodeURIComponent(m[4] ?? "");
    const body = at.files[file];
    if (body === undefined) return json(res, 404, { error: "Entry not found" }, { "x-error-code": "EntryNotFound" });
    const b = bytes(body);
    if (isLfs(file)) {
      blobs.set(sha256(b), { body: b, file });
      res.writeHead(302, { location: `${cdnUrl}/blob/${sha256(b)}`, "x-repo-commit": at.sha, "x-linked-etag": `"${sha256(b)}"` });
      return res.end();
    }
    sendFile(res, b, file, { "x-repo-commit": at.sha, etag: `"${gitBlobId(b)}"` }, options);
  });
  const url = await listen(hub);
  const stop = (s: Server) => new Promise<void>((resolve) => s.close(() => resolve()));
  return {
    url,
    requests,
    close: async () => {
      hub.closeAllConnections();
      cdn.closeAllConnections();
      await Promise.all([stop(hub), stop(cdn)]);
    },
  };
}

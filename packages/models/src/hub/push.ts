/**
 * Publishing a checkpoint folder to the hub: the repository is created when missing, every file
 * is uploaded in one commit (large ones through the hub's LFS/Xet storage, which
 * @huggingface/hub speaks), and a model card is added when the folder has none.
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
  /** The checkpoint folder (what savePretrained wrote); every file below it is uploaded. */
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
  onProgress?: HubProgressListener;
  /** Retries of the whole upload after a network error or 429/5xx; default 5, from 1 s doubling. */
  retry?: Partial<RetryPolicy>;
  signal?: AbortSignal;
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
}

// Python's upload_folder leaves these out as well: git internals and huggingface_hub's own metadata.
const SKIP_DIRS = new Set([".git", ".cache"]);

async function listFiles(root: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(root, rel), { withFileTypes: true })) {
    const p = rel === "" ? e.name : `${rel}/${e.name}`;
    // stat follows symlinks: a cache snapshot (links into blobs/) uploads its contents.
    const st = await fs.stat(path.join(root, p)).catch(() => undefined);
    if (st === undefined) continue;
    if (st.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...(await listFiles(root, p)));
    } else if (st.isFile() && !e.name.endsWith(".incomplete")) out.push(p);
  }
  return out.sort();
}

async function configJson(dir: string): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await fs.readFile(path.join(dir, "config.json"), "utf8")) as Record<string, unknown>;
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
  if (!HUB_ID.test(repo)) throw new HubPushError(`--repo must be a hub repository id of the form "org/name", got ${JSON.stringify(repo)}`);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new HubPushError(`${dir} is not a folder; pass the checkpoint folder to upload`);
  const token = options.token ?? (process.env["HF_TOKEN"] || undefined);
  if (token === undefined) {
    throw new HubPushError(`pushing to the hub needs a token with write access: set HF_TOKEN (create one at https://huggingface.co/settings/tokens)`);
  }
  if (hubOffline()) throw new HubPushError(`HF_HUB_OFFLINE is set, so pbrl may not reach the hub; unset it to push ${repo}`);
  const files = await listFiles(dir);
  if (files.length === 0) throw new HubPushError(`${dir} holds no files to upload`);
  const hubUrl = (options.hubUrl ?? hubEndpoint()).replace(/\/+$/, "");

  const hub = await import("@huggingface/hub");
  const generated = !files.includes("README.md");
  // The card goes up from memory: pushing never changes the user's folder.
  const card = generated ? modelCard({ repo, baseModel: options.baseModel, config: await configJson(dir), files }) : undefined;
  const sizes = new Map(files.map((f) => [f, statSync(path.join(dir, f)).size]));
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
        ...files.map((f) => ({ operation: "addOrUpdate" as const, path: f, content: pathToFileURL(path.join(dir, f)) })),
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
      return { repo, url: `${hubUrl}/${repo}`, commit: step.value?.commit.oid, createdRepo, files: all, generatedModelCard: generated };
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

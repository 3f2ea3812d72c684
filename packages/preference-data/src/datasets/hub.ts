/**
 * Hub datasets ("org/name") and local dataset folders to the data files of one subset and split,
 * the way load_dataset("org/name", config, split=…, revision=…) picks them. Online, the hub is
 * asked which commit the revision is at, and missing files are downloaded into the cache; when
 * the hub cannot be reached, or HF_HUB_OFFLINE is set, the cached copy is used.
 */
import { existsSync, promises as fs } from "node:fs";
import * as path from "node:path";
import { readUtf8File } from "./utf8-file.js";
import { convertedSplits, datasetSplits, type ConfigSplits } from "./data-files.js";
import { DatasetError } from "./errors.js";
import { hubClient, HubUnreachableError, type HubClient, type HubClientOptions } from "@pbrl/models";
import { cachedView, checkRevision, hubCommit, onlineView, type RepoView } from "./hub-cache.js";
import { hubOffline } from "./hub-http.js";

/** What to load from a dataset with splits; the keys name the run keys in messages. */
export interface SplitRequest {
  /** train_dataset or eval_dataset */
  key: string;
  split: string;
  config: string | undefined;
}

/** The branch the Hub's dataset viewer writes its Parquet conversion of every dataset to. */
const CONVERTED = "refs/convert/parquet";

/** A cached file that is listed but absent: the cached copy is partial. */
class NotCached extends Error {}

async function readme(view: RepoView, what: string): Promise<string | undefined> {
  if (!view.files.includes("README.md")) return undefined;
  const local = await view.local("README.md");
  // Stryker disable next-line StringLiteral: NotCached is caught by fromCache (only cached views lack files), and its message is never shown
  if (local === undefined) throw new NotCached("README.md");
  return readUtf8File(local, `${what}: README.md`);
}

function splitFiles(layout: ConfigSplits, req: SplitRequest, where: string): string[] {
  const files = layout.splits.get(req.split);
  if (files !== undefined) return files;
  const subset = layout.configs.length > 1 ? ` (subset ${JSON.stringify(layout.config)})` : "";
  const slice = /\[.*\]$/.test(req.split) ? "; slices like train[:100] are not supported" : "";
  throw new DatasetError(
    "layout",
    `${where}${subset} has no split ${JSON.stringify(req.split)}; its splits: ${[...layout.splits.keys()].map((s) => JSON.stringify(s)).join(", ")}. Set ${req.key}_split to one of them${slice}`,
  );
}

/**
 * The local paths of the split's files in `view`, falling back to the Parquet conversion when the
 * repository holds no data files pbrl reads (a loading script, .txt, compressed JSON lines, …).
 */
async function pick(view: RepoView, converted: (() => Promise<RepoView | undefined>) | undefined, req: SplitRequest, where: string): Promise<string[]> {
  const configKey = `${req.key}_config`;
  let layout = datasetSplits(view.files, await readme(view, where), req.config, where, configKey);
  let from = view;
  if (layout.splits.size === 0 && converted !== undefined) {
    const cv = await converted();
    if (cv !== undefined) {
      const alt = convertedSplits(cv.files, req.config, where, configKey);
      if (alt.splits.size > 0) [layout, from] = [alt, cv];
    }
  }
  if (layout.splits.size === 0) {
    const found = layout.unsupported.length > 0 ? `its data files are ${layout.unsupported.join(", ")}, which pbrl does not read` : "it holds no data files";
    throw new DatasetError(
      "layout",
      `${where}: ${found}, and there is no Parquet conversion of it (branch ${CONVERTED}); pbrl reads .jsonl, .json, .csv and .parquet: convert the data to one of these and pass the file`,
    );
  }
  const out: string[] = [];
  for (const f of splitFiles(layout, req, where)) {
    const local = await from.local(f);
    if (local === undefined) throw new NotCached(f);
    out.push(local);
  }
  return out;
}

async function fromCache(c: HubClient, revision: string, req: SplitRequest, where: string): Promise<string[] | undefined> {
  const view = await cachedView(c, revision);
  if (view === undefined) return undefined;
  try {
    return await pick(view, revision === "main" ? () => cachedView(c, CONVERTED) : undefined, req, where);
  } catch (err) {
    if (err instanceof NotCached) return undefined;
    throw err;
  }
}

/** The local files of `repo`'s split at `revision` (default "main"); `log` takes progress and fallback lines. */
export async function hubDatasetFiles(
  repo: string,
  revision: string,
  req: SplitRequest,
  log: (line: string) => void,
  options: HubClientOptions = {},
): Promise<string[]> {
  checkRevision(revision, `${req.key}_revision`);
  const where = `${req.key}: hub dataset ${repo}${revision === "main" ? "" : `@${revision}`}`;
  const c = hubClient("dataset", repo, options);
  const cacheDir = c.repoDir;
  if (hubOffline()) {
    const cached = await fromCache(c, revision, req, where);
    if (cached !== undefined) return cached;
    throw new DatasetError(
      "unavailable",
      `${where} (split ${JSON.stringify(req.split)}) is not in the Hugging Face cache (${cacheDir}) and HF_HUB_OFFLINE is set: run once without HF_HUB_OFFLINE on a machine that reaches ${c.endpoint} (with the same HF_HUB_CACHE), or pass a local file`,
    );
  }
  try {
    const commit = await hubCommit(c, revision, where);
    const view = await onlineView(c, revision, commit!, where, log);
    const converted =
      revision === "main"
        ? async () => {
            const at = await hubCommit(c, CONVERTED, where, true);
            return at === undefined ? undefined : onlineView(c, CONVERTED, at, where, log);
          }
        : undefined;
    return await pick(view, converted, req, where);
  } catch (err) {
    if (!(err instanceof HubUnreachableError)) throw err;
    const why = `cannot reach ${c.endpoint} (${err.message})`;
    const cached = await fromCache(c, revision, req, where);
    if (cached !== undefined) {
      log(`pbrl: ${where}: ${why}; using the cached copy in ${cacheDir}`);
      return cached;
    }
    throw new DatasetError(
      "unavailable",
      `${where}: ${why}, and it is not in the Hugging Face cache (${cacheDir}); check the network and HF_ENDPOINT, download it once where the hub is reachable, or pass a local file`,
    );
  }
}

/** A folder's files, relative; hidden folders (.git, .cache) are never data, so they are not walked. */
async function walk(dir: string, prefix = ""): Promise<string[]> {
  // Stryker disable next-line ArrayDeclaration: a name without an extension put first is no data file, and no rule takes it
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory() && e.name.startsWith(".")) continue;
    if (e.isDirectory()) out.push(...(await walk(path.join(dir, e.name), `${prefix}${e.name}/`)));
    else if (e.isFile() || e.isSymbolicLink()) out.push(prefix + e.name);
  }
  return out;
}

/** The files of a split of a local dataset folder (laid out as a hub dataset repository). */
export async function folderDatasetFiles(dir: string, req: SplitRequest): Promise<string[]> {
  const where = `${req.key}: dataset folder ${dir}`;
  // Stryker disable next-line MethodExpression: every rule of datasetSplits sorts the files it takes
  const files = (await walk(dir)).sort();
  const card = path.join(dir, "README.md");
  const layout = datasetSplits(files, existsSync(card) ? readUtf8File(card, `${req.key}: README.md`) : undefined, req.config, where, `${req.key}_config`);
  if (layout.splits.size === 0) {
    const found =
      layout.unsupported.length > 0
        ? `its data files are ${layout.unsupported.join(", ")}, which pbrl does not read`
        : "it holds no .jsonl, .json, .csv or .parquet files";
    throw new DatasetError("layout", `${where}: ${found}`);
  }
  return splitFiles(layout, req, where).map((f) => path.join(dir, f));
}

/**
 * Hugging Face hub ids ("org/name") resolved to local checkpoint folders: first the local
 * Hugging Face cache (the layout huggingface_hub uses, so models downloaded by Python are found),
 * then a download into that cache when the network allows.
 */
import { existsSync, promises as fs } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { writeFileAtomic } from "@pbrl/core-tensor";

export class ModelSourceError extends Error {
  override name = "ModelSourceError";
}

const HUB_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;
const REQUIRED = ["config.json"];
const OPTIONAL = ["generation_config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja"];

export function hubCacheDir(): string {
  const env = process.env;
  if (env["HF_HUB_CACHE"]) return env["HF_HUB_CACHE"];
  const home = env["HF_HOME"] ?? path.join(env["XDG_CACHE_HOME"] ?? path.join(os.homedir(), ".cache"), "huggingface");
  return path.join(home, "hub");
}

function endpoint(): string {
  return (process.env["HF_ENDPOINT"] ?? "https://huggingface.co").replace(/\/+$/, "");
}

function repoCacheDir(id: string): string {
  return path.join(hubCacheDir(), `models--${id.replace("/", "--")}`);
}

async function cachedSnapshot(id: string, revision: string): Promise<string | undefined> {
  const repo = repoCacheDir(id);
  let commit = revision;
  try {
    commit = (await fs.readFile(path.join(repo, "refs", revision), "utf8")).trim();
  } catch {
    // revision may itself be a commit hash
  }
  const dir = path.join(repo, "snapshots", commit);
  return existsSync(path.join(dir, "config.json")) ? dir : undefined;
}

async function fetchFile(id: string, revision: string, file: string, token: string | undefined): Promise<{ body: Uint8Array; commit: string | undefined } | undefined> {
  const url = `${endpoint()}/${id}/resolve/${encodeURIComponent(revision)}/${file}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, redirect: "follow" });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ModelSourceError(
      `cannot download ${id} from ${endpoint()} (${cause?.code ?? cause?.message ?? (err as Error).message}); the machine may be offline. ` +
        `Pass a local checkpoint folder instead, or put the model in the Hugging Face cache (${repoCacheDir(id)}) on a machine with network access.`,
    );
  }
  if (res.status === 404) return undefined;
  if (!res.ok) {
    const hint = res.status === 401 || res.status === 403 ? " (a gated or private model: set HF_TOKEN)" : "";
    throw new ModelSourceError(`downloading ${url} failed with HTTP ${res.status}${hint}`);
  }
  return { body: new Uint8Array(await res.arrayBuffer()), commit: res.headers.get("x-repo-commit") ?? undefined };
}

async function download(id: string, revision: string): Promise<string> {
  const token = process.env["HF_TOKEN"] ?? process.env["HUGGING_FACE_HUB_TOKEN"];
  const got = new Map<string, Uint8Array>();
  let commit: string | undefined;
  const take = async (file: string, required: boolean): Promise<Uint8Array | undefined> => {
    const r = await fetchFile(id, revision, file, token);
    if (r === undefined) {
      if (required) throw new ModelSourceError(`${id}: the hub has no ${file} at revision ${revision}; is it a causal LM repository?`);
      return undefined;
    }
    commit ??= r.commit;
    got.set(file, r.body);
    return r.body;
  };
  for (const f of REQUIRED) await take(f, true);
  for (const f of OPTIONAL) await take(f, false);
  const index = await take("model.safetensors.index.json", false);
  if (index !== undefined) {
    const map = (JSON.parse(new TextDecoder().decode(index)) as { weight_map: Record<string, string> }).weight_map;
    for (const shard of new Set(Object.values(map))) await take(shard, true);
  } else if ((await take("model.safetensors", false)) === undefined) {
    throw new ModelSourceError(`${id}: the hub has no safetensors weights (model.safetensors or model.safetensors.index.json); pbrl does not read .bin weights`);
  }
  const snapshot = path.join(repoCacheDir(id), "snapshots", commit ?? revision);
  for (const [file, body] of got) await writeFileAtomic(path.join(snapshot, file), body);
  await writeFileAtomic(path.join(repoCacheDir(id), "refs", revision), commit ?? revision);
  return snapshot;
}

/**
 * A local folder for a model source: an existing folder as is; a hub id from the cache, or
 * downloaded into it unless HF_HUB_OFFLINE is set. `revision` defaults to "main".
 */
export async function resolveModelDir(source: string, revision = "main"): Promise<string> {
  if (existsSync(source)) {
    if (!existsSync(path.join(source, "config.json"))) throw new ModelSourceError(`${source} is not a Hugging Face checkpoint folder: it has no config.json`);
    return source;
  }
  if (!HUB_ID.test(source)) {
    throw new ModelSourceError(`model source ${JSON.stringify(source)} is neither an existing folder nor a hub id of the form "org/name"`);
  }
  const cached = await cachedSnapshot(source, revision);
  if (cached !== undefined) return cached;
  const offline = process.env["HF_HUB_OFFLINE"];
  if (offline === "1" || offline?.toLowerCase() === "true") {
    throw new ModelSourceError(`${source} is not in the Hugging Face cache (${repoCacheDir(source)}) and HF_HUB_OFFLINE is set; download it first or pass a local folder`);
  }
  return download(source, revision);
}

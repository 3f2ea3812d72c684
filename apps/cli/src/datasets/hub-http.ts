/**
 * The few Hugging Face Hub API calls datasets need, as huggingface_hub makes them: HF_ENDPOINT
 * (default https://huggingface.co), HF_TOKEN sent as a Bearer token to that endpoint only (never
 * to the storage a download redirects to, and never printed).
 */
import { hubEndpoint, hubOffline as modelsOffline, readBodyCapped } from "@pbrl/models";
import { DatasetSourceError } from "./errors.js";

/** HF_ENDPOINT, else https://huggingface.co (the same setting model downloads read). */
export const endpoint = hubEndpoint;

const token = (): string | undefined => process.env["HF_TOKEN"] || process.env["HUGGING_FACE_HUB_TOKEN"] || undefined;

/** HF_HUB_OFFLINE, or the `datasets` library's own HF_DATASETS_OFFLINE, set to 1/true/yes/on. */
export const hubOffline = (): boolean => modelsOffline() || /^(1|true|yes|on)$/i.test(process.env["HF_DATASETS_OFFLINE"]?.trim() ?? "");

/**
 * The hub could not be asked (no connection, a timeout, HTTP 429 or 5xx): a cached copy may
 * stand in, as huggingface_hub does. Other HTTP errors are answers, and are not retried from cache.
 */
export class HubUnreachable extends Error {
  override name = "HubUnreachable";
}

function networkCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

/**
 * GET with redirects followed by hand, so the Authorization header goes only to the endpoint's
 * origin (downloads redirect to a CDN or Xet storage, which must not see the token).
 */
export async function hubGet(url: string, options: { timeoutMs?: number; signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Response> {
  const home = new URL(endpoint()).origin;
  let current = url;
  for (let hop = 0; hop < 10; hop++) {
    const t = token();
    const headers: Record<string, string> = { "user-agent": "pbrl", ...options.headers };
    if (t !== undefined && new URL(current).origin === home) headers["authorization"] = `Bearer ${t}`;
    let res: Response;
    try {
      // A timeout covers the body too, so only API calls (small JSON answers) get one; downloads pass a stall signal.
      const signal = options.signal ?? (options.timeoutMs !== undefined ? AbortSignal.timeout(options.timeoutMs) : undefined);
      res = await fetch(current, { headers, redirect: "manual", ...(signal !== undefined ? { signal } : {}) });
    } catch (err) {
      throw new HubUnreachable(`cannot reach ${endpoint()} (${networkCause(err)})`);
    }
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location !== null) {
      await res.body?.cancel();
      current = new URL(location, current).href;
      continue;
    }
    if (res.status === 429 || res.status >= 500) {
      await res.body?.cancel();
      throw new HubUnreachable(`${endpoint()} answered HTTP ${res.status}`);
    }
    return res;
  }
  throw new DatasetSourceError(`${url}: more than 10 redirects`);
}

/** A failed answer as an error that says what to do; `what` names the dataset and run key. */
export async function hubHttpError(res: Response, what: string, repo: string, revision: string): Promise<DatasetSourceError> {
  const code = res.headers.get("x-error-code");
  let detail = "";
  try {
    // Only the start of the message is shown: a longer body is not read.
    const raw = await readBodyCapped(res, 64 * 1024);
    const body = raw === undefined ? undefined : (JSON.parse(raw.toString("utf8")) as { error?: unknown } | null);
    if (typeof body?.error === "string") detail = ` (${body.error.slice(0, 200)})`;
  } catch {
    // not JSON: the status says enough
  }
  const page = `${endpoint()}/datasets/${repo}`;
  if (code === "RevisionNotFound")
    return new DatasetSourceError(
      `${what}: the dataset has no revision ${JSON.stringify(revision)}${detail}; give a branch, tag or commit that exists on ${page}`,
    );
  if (code === "GatedRepo" || res.status === 403) {
    const fix =
      token() === undefined
        ? "accept its conditions on " + page + ", then set HF_TOKEN to an access token"
        : "the token in HF_TOKEN has no access: accept the dataset's conditions on " + page + " with that account, or use a token with read access";
    return new DatasetSourceError(`${what}: access denied (HTTP ${res.status})${detail}; ${fix}`);
  }
  if (res.status === 401 || res.status === 404) {
    const fix =
      token() === undefined
        ? "check the id (org/name, as on the dataset's page), or set HF_TOKEN if it is private"
        : "check the id (org/name), and that HF_TOKEN's account can read it";
    return new DatasetSourceError(`${what}: no dataset ${repo} on ${endpoint()} (HTTP ${res.status})${detail}; ${fix}`);
  }
  return new DatasetSourceError(`${what}: ${res.url || endpoint()} answered HTTP ${res.status}${detail}`);
}

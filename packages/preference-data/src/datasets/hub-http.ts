/**
 * The dataset side of the hub client of @pbrl/models: the offline switch `datasets` adds, and a
 * failed answer as an error that says what to do about that dataset.
 */
import { hubOffline as modelsOffline, readBodyCapped, type HubClient } from "@pbrl/models";
import { DatasetError } from "./errors.js";

/** HF_HUB_OFFLINE, or the `datasets` library's own HF_DATASETS_OFFLINE, set to 1/true/yes/on. */
// Stryker disable next-line StringLiteral: an unset HF_DATASETS_OFFLINE reads as any text that is none of 1/true/yes/on
export const hubOffline = (): boolean => modelsOffline() || /^(1|true|yes|on)$/i.test(process.env["HF_DATASETS_OFFLINE"]?.trim() ?? "");

/** A failed answer as an error that says what to do; `what` names the dataset and run key. */
export async function hubHttpError(res: Response, what: string, c: HubClient, revision: string): Promise<DatasetError> {
  const code = res.headers.get("x-error-code");
  let detail = "";
  try {
    // Only the start of the message is shown: a longer body is not read.
    const raw = await readBodyCapped(res, 64 * 1024);
    // Stryker disable next-line ConditionalExpression: undefined.toString throws a TypeError, which the catch below turns into no detail, as undefined does
    const body = raw === undefined ? undefined : (JSON.parse(raw.toString("utf8")) as { error?: unknown } | null);
    // Stryker disable next-line OptionalChaining: null.error throws a TypeError, which the catch below turns into no detail, as the check does
    if (typeof body?.error === "string") detail = ` (${body.error.slice(0, 200)})`;
  } catch {
    // not JSON: the status says enough
  }
  const page = `${c.endpoint}/datasets/${c.id}`;
  if (code === "RevisionNotFound")
    return new DatasetError(
      "hub",
      `${what}: the dataset has no revision ${JSON.stringify(revision)}${detail}; give a branch, tag or commit that exists on ${page}`,
    );
  if (code === "GatedRepo" || res.status === 403) {
    const fix =
      c.token === undefined
        ? "accept its conditions on " + page + ", then set HF_TOKEN to an access token"
        : "the token in HF_TOKEN has no access: accept the dataset's conditions on " + page + " with that account, or use a token with read access";
    return new DatasetError("hub", `${what}: access denied (HTTP ${res.status})${detail}; ${fix}`);
  }
  if (res.status === 401 || res.status === 404) {
    const fix =
      c.token === undefined
        ? "check the id (org/name, as on the dataset's page), or set HF_TOKEN if it is private"
        : "check the id (org/name), and that HF_TOKEN's account can read it";
    return new DatasetError("hub", `${what}: no dataset ${c.id} on ${c.endpoint} (HTTP ${res.status})${detail}; ${fix}`);
  }
  return new DatasetError("hub", `${what}: ${res.url || c.endpoint} answered HTTP ${res.status}${detail}`);
}

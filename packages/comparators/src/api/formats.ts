/**
 * The four request formats of the API comparator: their names and aliases, request bodies,
 * response parsing, and how many completions each request asks for.
 */

export type ApiFormat = "generic" | "openai" | "anthropic" | "openai_responses";

/** Accepted spellings (trimmed, any case) → canonical format; the same aliases as the config. */
export const API_FORMAT_ALIASES: Readonly<Record<string, ApiFormat>> = {
  generic: "generic",
  openai: "openai",
  openai_chat: "openai",
  chat: "openai",
  anthropic: "anthropic",
  anthropic_messages: "anthropic",
  messages: "anthropic",
  openai_responses: "openai_responses",
  responses: "openai_responses",
  codex: "openai_responses",
};

/** A canonical format name or one of its aliases. */
export type ApiFormatName = keyof typeof API_FORMAT_ALIASES | ApiFormat;

/** The canonical format for a name or alias; anything else is an error listing what is accepted. */
export function normalizeApiFormat(name: string): ApiFormat {
  const f = typeof name === "string" ? API_FORMAT_ALIASES[name.trim().toLowerCase()] : undefined;
  if (f !== undefined) return f;
  const groups = (["generic", "openai", "anthropic", "openai_responses"] as const).map((c) => {
    const aliases = Object.keys(API_FORMAT_ALIASES).filter((a) => a !== c && API_FORMAT_ALIASES[a] === c);
    return aliases.length === 0 ? c : `${c} (aliases: ${aliases.join(", ")})`;
  });
  throw new Error(`comparator_api_format: unknown format ${JSON.stringify(name)}; expected one of ${groups.join("; ")}`);
}

/** The env var read when comparator_api_key_env is not given (null: no key). */
export function defaultKeyEnv(format: ApiFormat): string | null {
  switch (format) {
    case "anthropic":
      return "ANTHROPIC_API_KEY";
    case "openai":
    case "openai_responses":
      return "OPENAI_API_KEY";
    default:
      return null;
  }
}

/** Formats with no `n`: one request per candidate. */
export function oneCandidatePerRequest(format: ApiFormat): boolean {
  return format === "anthropic" || format === "openai_responses";
}

/** The sampling settings the trainer passes (GenerationSettings from @pbrl/preference-data fits). */
export interface ApiGenerationSettings {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  /** null: not sent. */
  topK: number | null;
}

/** One HTTP request's worth of work. */
export interface ApiRequestSpec {
  prompt: string;
  /** Sent as agent_idx by the generic format. */
  agentIdx: number;
  /** The task item (generic format only), made JSON-safe. */
  batchItem: unknown;
  /** Completions this request asks for. */
  count: number;
}

export interface BodyContext {
  model: string | null;
  generation: ApiGenerationSettings;
  extraBody: Readonly<Record<string, unknown>> | null;
}

/**
 * The JSON body of one request: the format's fields, then extraBody merged over them (shallow),
 * then every top-level null dropped, so `"top_p": null` in extraBody removes a field.
 */
export function buildBody(format: ApiFormat, spec: ApiRequestSpec, c: BodyContext): Record<string, unknown> {
  const g = c.generation;
  const messages = [{ role: "user", content: spec.prompt }];
  let body: Record<string, unknown>;
  switch (format) {
    case "generic":
      body = {
        prompt: spec.prompt,
        agent_idx: spec.agentIdx,
        num_return_sequences: spec.count,
        max_new_tokens: g.maxNewTokens,
        temperature: g.temperature,
        top_p: g.topP,
        top_k: g.topK,
        batch_item: jsonSafe(spec.batchItem),
      };
      if (c.model !== null) body["model"] = c.model;
      break;
    case "openai":
      body = { model: c.model, messages, n: spec.count, max_tokens: g.maxNewTokens, temperature: g.temperature, top_p: g.topP };
      break;
    case "anthropic":
      // Some Claude models reject requests that set both temperature and top_p; top_p = 1 is the
      // default anyway, so it is sent only when it changes something.
      body = { model: c.model, max_tokens: g.maxNewTokens, messages, temperature: g.temperature };
      if (g.topP < 1) body["top_p"] = g.topP;
      break;
    case "openai_responses":
      body = { model: c.model, input: spec.prompt, max_output_tokens: g.maxNewTokens, temperature: g.temperature, top_p: g.topP };
      break;
  }
  const merged: Record<string, unknown> = { ...body, ...(c.extraBody ?? {}) };
  for (const k of Object.keys(merged)) if (merged[k] === null || merged[k] === undefined) delete merged[k];
  return merged;
}

/** Completions read from one response, with whether each ended by itself (not by the token limit). */
export interface ParsedCompletions {
  texts: string[];
  stopped: boolean[];
}

export function parseResponse(format: ApiFormat, json: unknown, responseField: string): ParsedCompletions {
  switch (format) {
    case "generic":
      return parseGeneric(json, responseField);
    case "openai":
      return parseOpenAI(json);
    case "anthropic":
      return parseAnthropic(json);
    case "openai_responses":
      return parseResponses(json);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const STOP_REASONS = new Set(["stop", "end_turn", "stop_sequence", "eos", "eos_token", "completed"]);

/** Follows `a.b.0.c`; numeric segments index arrays. */
export function followPath(value: unknown, path: string): unknown {
  let v = value;
  for (const seg of path.split(".")) {
    if (Array.isArray(v) && /^\d+$/.test(seg)) v = v[Number(seg)];
    else if (isObject(v) && Object.prototype.hasOwnProperty.call(v, seg)) v = v[seg];
    else return undefined;
  }
  return v;
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

/**
 * generic: the dotted responseField, else the first non-empty of completions, responses,
 * outputs, choices (or the body itself when it is an array). Items are strings, or objects with
 * text / content / completion / response / message.content; an object's `stopped` (boolean) or
 * `finish_reason` / `stop_reason` ("stop", "end_turn", "stop_sequence", "eos") marks it stopped.
 * Items without text do not count as completions.
 */
function parseGeneric(json: unknown, responseField: string): ParsedCompletions {
  let found = followPath(json, responseField);
  if (isEmpty(found)) {
    if (isObject(json)) found = ["completions", "responses", "outputs", "choices"].map((k) => json[k]).find((v) => !isEmpty(v));
    else if (Array.isArray(json)) found = json;
  }
  const out: ParsedCompletions = { texts: [], stopped: [] };
  if (found === undefined || found === null) return out;
  const items: unknown[] = Array.isArray(found) ? found : [found];
  for (const item of items) {
    if (typeof item === "string") {
      out.texts.push(item);
      out.stopped.push(false);
    } else if (typeof item === "number" || typeof item === "boolean") {
      out.texts.push(String(item));
      out.stopped.push(false);
    } else if (isObject(item)) {
      const text = ["text", "content", "completion", "response"].map((k) => item[k]).find((v): v is string => typeof v === "string" && v !== "") ?? messageContent(item);
      if (text === undefined) continue;
      out.texts.push(text);
      const reason = item["finish_reason"] ?? item["stop_reason"];
      out.stopped.push(typeof item["stopped"] === "boolean" ? item["stopped"] : typeof reason === "string" && STOP_REASONS.has(reason));
    }
  }
  return out;
}

function messageContent(item: Record<string, unknown>): string | undefined {
  const m = item["message"];
  return isObject(m) && typeof m["content"] === "string" ? m["content"] : undefined;
}

/** openai: choices[].message.content (fallback choices[].text); finish_reason "stop" → stopped. */
function parseOpenAI(json: unknown): ParsedCompletions {
  const out: ParsedCompletions = { texts: [], stopped: [] };
  const choices = isObject(json) ? json["choices"] : undefined;
  if (!Array.isArray(choices)) return out;
  for (const c of choices) {
    if (!isObject(c)) continue;
    const text = messageContent(c) ?? (typeof c["text"] === "string" ? c["text"] : undefined);
    if (text === undefined) continue;
    out.texts.push(text);
    out.stopped.push(c["finish_reason"] === "stop");
  }
  return out;
}

/** anthropic: the first content[] block of type text; stop_reason end_turn / stop_sequence → stopped. */
function parseAnthropic(json: unknown): ParsedCompletions {
  const content = isObject(json) ? json["content"] : undefined;
  if (!Array.isArray(content)) return { texts: [], stopped: [] };
  const block = content.find((b): b is Record<string, unknown> => isObject(b) && b["type"] === "text" && typeof b["text"] === "string");
  if (block === undefined) return { texts: [], stopped: [] };
  const reason = (json as Record<string, unknown>)["stop_reason"];
  return { texts: [block["text"] as string], stopped: [reason === "end_turn" || reason === "stop_sequence"] };
}

/** openai_responses: the first output[].content[] block of type output_text or text; status completed → stopped. */
function parseResponses(json: unknown): ParsedCompletions {
  const output = isObject(json) ? json["output"] : undefined;
  if (!Array.isArray(output)) return { texts: [], stopped: [] };
  for (const o of output) {
    const content = isObject(o) ? o["content"] : undefined;
    if (!Array.isArray(content)) continue;
    const block = content.find((b): b is Record<string, unknown> => isObject(b) && (b["type"] === "output_text" || b["type"] === "text") && typeof b["text"] === "string");
    if (block !== undefined) return { texts: [block["text"] as string], stopped: [(json as Record<string, unknown>)["status"] === "completed"] };
  }
  return { texts: [], stopped: [] };
}

/** DeepSeek's Chat Completions accept only n = 1; OpenAI's at most 128. */
export function providerNLimit(url: string, model: string | null): number | null {
  let host = "";
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    // validated at construction
  }
  if (url.toLowerCase().includes("api.deepseek.com") || (model ?? "").toLowerCase().startsWith("deepseek-")) return 1;
  if (host === "api.openai.com") return 128;
  return null;
}

/**
 * How many completions each request asks for, to get `n` in all: anthropic and openai_responses
 * one per request; openai and generic up to the cap (maxNPerRequest and, for openai, the
 * provider's limit) per request.
 */
export function planCounts(format: ApiFormat, n: number, maxNPerRequest: number | null, providerLimit: number | null): number[] {
  if (n <= 0) return [];
  let cap = n;
  if (oneCandidatePerRequest(format)) cap = 1;
  else {
    if (maxNPerRequest !== null) cap = Math.min(cap, maxNPerRequest);
    if (format === "openai" && providerLimit !== null) cap = Math.min(cap, providerLimit);
  }
  cap = Math.max(1, cap);
  const out: number[] = [];
  for (let left = n; left > 0; left -= cap) out.push(Math.min(cap, left));
  return out;
}

/**
 * A JSON-safe copy of a task item: non-finite numbers and bigints become strings (bigints that fit
 * stay numbers), dates ISO strings, typed arrays and sets arrays, maps objects; functions,
 * symbols and undefined are dropped from objects (null in arrays); cycles become "[Circular]".
 */
export function jsonSafe(value: unknown, seen: Set<object> = new Set()): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (typeof value !== "object") return undefined;
  if (seen.has(value)) return "[Circular]";
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  seen.add(value);
  try {
    if (ArrayBuffer.isView(value) && !(value instanceof DataView)) return Array.from(value as unknown as ArrayLike<number | bigint>, (x) => jsonSafe(x, seen));
    if (Array.isArray(value) || value instanceof Set) return Array.from(value as Iterable<unknown>, (x) => jsonSafe(x, seen) ?? null);
    const entries: [string, unknown][] = value instanceof Map ? [...value.entries()].map(([k, v]) => [String(k), v]) : Object.entries(value);
    const out: Record<string, unknown> = {};
    for (const [k, v] of entries) {
      const safe = jsonSafe(v, seen);
      if (safe !== undefined) out[k] = safe;
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

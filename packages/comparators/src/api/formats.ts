/**
 * The four request formats of the API comparator: their names and aliases, request bodies,
 * response parsing, and how many completions each request asks for.
 */
import { ApiMalformedResponseError, jsonTypeOf, snippet } from "./errors.js";

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
      body["model"] = c.model; // a null model is dropped with the other nulls below
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

/** Where a response came from, for the errors its parsing raises. */
export interface ResponseSource {
  /** The display URL (never one carrying a key). */
  url: string;
  /** HTTP status of the response (default 200). */
  status?: number;
  /** HTTP attempts the request took (default 0: not named in the message). */
  attempts?: number;
  /** Scrubs secrets from the text a message quotes (default: none). */
  redact?: (text: string) => string;
}

/**
 * A 2xx body as the format reads it: JSON.parse, then parseResponse. A body that is not JSON
 * (a wrong URL serving HTML, a proxy's login page, a streaming endpoint) is an
 * ApiMalformedResponseError; the same request would get the same answer, so it is not retried.
 * (A body cut short by a dropped connection surfaces as a network error instead, which is.)
 */
export function parseResponseBody(format: ApiFormat, body: string, responseField: string, source: ResponseSource): ParsedCompletions {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    const status = source.status ?? 200;
    throw new ApiMalformedResponseError({
      format,
      url: source.url,
      kind: `HTTP ${status} with a body that is not JSON`,
      status,
      attempts: source.attempts ?? 0,
      detail: snippet(body, source.redact ?? ((t) => t)),
      path: null,
      receivedType: "text that is not JSON",
    });
  }
  return parseResponse(format, json, responseField, source);
}

/**
 * The completions in a parsed response. Where the format puts a completion, anything but a string
 * (a number, an object, null, an array) is an ApiMalformedResponseError naming its path (e.g.
 * `$.choices[1].message.content`), its JSON type and what the server must return: such a value
 * would otherwise be trained on as text. A response without completions parses to none (the
 * comparator's count check reports it). OpenAI's `message.content: null` is the API's way of
 * saying "no text" (a refusal, a tool call) and counts as no completion, not as an error.
 */
export function parseResponse(format: ApiFormat, json: unknown, responseField: string, source: ResponseSource = { url: "<unknown URL>" }): ParsedCompletions {
  const fail = malformed(format, source);
  switch (format) {
    case "generic":
      return parseGeneric(json, responseField, fail);
    case "openai":
      return parseOpenAI(json, fail);
    case "anthropic":
      return parseAnthropic(json, fail);
    case "openai_responses":
      return parseResponses(json, fail);
  }
}

/** Throws the error for a value at `path` that is not what the format promises; `got` overrides "a number (42)". */
type Fail = (path: string, value: unknown, got?: string) => never;

/** What each format's server must put where a completion goes. */
const EXPECTED: Record<ApiFormat, string> = {
  generic:
    'the server must return each completion as a JSON string, or as an object with a string "text" (or "content", "completion", "response", "message.content")',
  openai: "a Chat Completions server must return choices[].message.content as a string (or null for no text)",
  anthropic: 'a Messages server must return content[] as objects, each "text" block with a string "text"',
  openai_responses: 'a Responses server must return output[] items as objects, each "output_text" content block with a string "text"',
};

function malformed(format: ApiFormat, source: ResponseSource): Fail {
  const redact = source.redact ?? ((t: string) => t);
  return (path, value, got) => {
    const type = jsonTypeOf(value);
    const shown = preview(value, redact);
    const what = got ?? `${article(type)}${shown === undefined ? "" : ` (${shown})`}, not a string`;
    throw new ApiMalformedResponseError({
      format,
      url: source.url,
      kind: `malformed completion at ${path}: ${what}; ${EXPECTED[format]}`,
      status: source.status ?? 200,
      attempts: 0,
      path,
      receivedType: type,
    });
  };
}

function article(type: string): string {
  return type === "null" || type === "undefined" ? type : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** At most 80 characters of a value, for a message; undefined when it has no JSON form (bigints, cycles, nesting too deep). */
function preview(value: unknown, redact: (t: string) => string): string | undefined {
  let text: string | undefined;
  // Stryker disable BlockStatement: an empty catch leaves text undefined, which returns undefined below too
  try {
    text = JSON.stringify(value);
  } catch {
    return undefined;
  }
  // Stryker restore BlockStatement
  // Only the start is quoted: no need to scan megabytes for whitespace and secrets.
  return text === undefined ? undefined : snippet(text.slice(0, 1000), redact, 80);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** An own property: a response's keys never reach Object.prototype ("constructor", "__proto__"). */
function own(o: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

// Of unknown: has() of any value is false but for these strings.
const STOP_REASONS: ReadonlySet<unknown> = new Set(["stop", "end_turn", "stop_sequence", "eos", "eos_token", "completed"]);

/** A path segment that indexes an array. */
const INDEX = /^\d+$/;

/** Follows `a.b.0.c`; numeric segments index arrays. */
export function followPath(value: unknown, path: string): unknown {
  let v = value;
  for (const seg of path.split(".")) {
    if (Array.isArray(v) && INDEX.test(seg)) v = v[Number(seg)];
    else if (isObject(v)) v = own(v, seg);
    else return undefined;
  }
  return v;
}

/** `a.0.b` as a message shows it: `$.a[0].b`. */
function pathOf(dotted: string): string {
  return `$${dotted
    .split(".")
    .map((seg) => (INDEX.test(seg) ? `[${seg}]` : `.${seg}`))
    .join("")}`;
}

function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

const GENERIC_FALLBACKS = ["completions", "responses", "outputs", "choices"] as const;
const GENERIC_TEXT_FIELDS = ["text", "content", "completion", "response"] as const;

/**
 * generic: the dotted responseField, else the first non-empty of completions, responses,
 * outputs, choices (or the body itself when it is an array). Items are strings, or objects with
 * text / content / completion / response / message.content; an object's `stopped` (boolean) or
 * `finish_reason` / `stop_reason` ("stop", "end_turn", "stop_sequence", "eos") marks it stopped.
 * Any other item is an error.
 */
function parseGeneric(json: unknown, responseField: string, fail: Fail): ParsedCompletions {
  const out: ParsedCompletions = { texts: [], stopped: [] };
  const at = locateGeneric(json, responseField);
  if (at === undefined) return out;
  const { found, path } = at;
  const items: readonly unknown[] = Array.isArray(found) ? found : [found];
  items.forEach((item, i) => {
    const { text, stopped } = genericItem(item, Array.isArray(found) ? `${path}[${i}]` : path, fail);
    out.texts.push(text);
    out.stopped.push(stopped);
  });
  return out;
}

/** Where the completions are and how a message names that place; undefined: nowhere (no completions). */
function locateGeneric(json: unknown, responseField: string): { found: unknown; path: string } | undefined {
  const found = followPath(json, responseField);
  if (!isEmpty(found)) return { found, path: pathOf(responseField) };
  if (Array.isArray(json)) return { found: json, path: "$" };
  if (!isObject(json)) return undefined;
  const key = GENERIC_FALLBACKS.find((k) => !isEmpty(own(json, k)));
  return key === undefined ? undefined : { found: own(json, key), path: `$.${key}` };
}

function genericItem(item: unknown, at: string, fail: Fail): { text: string; stopped: boolean } {
  if (typeof item === "string") return { text: item, stopped: false };
  if (!isObject(item)) return fail(at, item);
  const text = genericObjectText(item, at, fail);
  const flag = own(item, "stopped");
  const reason = own(item, "finish_reason") ?? own(item, "stop_reason");
  return { text, stopped: typeof flag === "boolean" ? flag : STOP_REASONS.has(reason) };
}

/** The first non-empty string field (message.content last); "" when the only strings are empty. */
function genericObjectText(item: Record<string, unknown>, at: string, fail: Fail): string {
  const message = own(item, "message");
  const content = isObject(message) ? own(message, "content") : undefined;
  const candidates: [string, unknown][] = [
    ...GENERIC_TEXT_FIELDS.map((k): [string, unknown] => [`${at}.${k}`, own(item, k)]),
    [`${at}.message.content`, content],
  ];
  const strings = candidates.filter((c): c is [string, string] => typeof c[1] === "string");
  const text = strings.find(([, v]) => v !== "") ?? strings[0];
  if (text !== undefined) return text[1];
  const present = candidates.find(([, v]) => v !== undefined);
  if (present !== undefined) return fail(present[0], present[1]);
  return fail(at, item, 'an object without a "text", "content", "completion", "response" or "message.content" field');
}

/** openai: choices[].message.content (fallback choices[].text); finish_reason "stop" → stopped. */
function parseOpenAI(json: unknown, fail: Fail): ParsedCompletions {
  const out: ParsedCompletions = { texts: [], stopped: [] };
  const choices = isObject(json) ? own(json, "choices") : undefined;
  if (!Array.isArray(choices)) return out;
  choices.forEach((c: unknown, i) => {
    const at = `$.choices[${i}]`;
    if (!isObject(c)) return fail(at, c, `${article(jsonTypeOf(c))} where a choice object belongs`);
    const text = openAIText(c, at, fail);
    if (text === null) return;
    out.texts.push(text);
    out.stopped.push(own(c, "finish_reason") === "stop");
  });
  return out;
}

/** A choice's text; null when it has none (message.content null: a refusal or a tool call). */
function openAIText(c: Record<string, unknown>, at: string, fail: Fail): string | null {
  const message = own(c, "message");
  if (message !== undefined && message !== null) {
    if (!isObject(message)) return fail(`${at}.message`, message, `${article(jsonTypeOf(message))} where the message object belongs`);
    const content = own(message, "content");
    if (typeof content === "string") return content;
    if (content !== undefined && content !== null) return fail(`${at}.message.content`, content);
  }
  const text = own(c, "text");
  if (typeof text === "string") return text;
  if (text !== undefined && text !== null) return fail(`${at}.text`, text);
  return null;
}

/** The first block of `blocks` whose type is one of `types`; a non-object block or a non-string text is an error. */
function firstTextBlock(blocks: readonly unknown[], at: string, types: readonly string[], fail: Fail): string | undefined {
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i];
    if (!isObject(b)) return fail(`${at}[${i}]`, b, `${article(jsonTypeOf(b))} where a content block object belongs`);
    const type = own(b, "type");
    if (!(types as readonly unknown[]).includes(type)) continue; // includes() of a type that is no string is false
    const text = own(b, "text");
    if (typeof text !== "string") return fail(`${at}[${i}].text`, text);
    return text;
  }
  return undefined;
}

/** anthropic: the first content[] block of type text; stop_reason end_turn / stop_sequence → stopped. */
function parseAnthropic(json: unknown, fail: Fail): ParsedCompletions {
  if (!isObject(json)) return { texts: [], stopped: [] };
  const content = own(json, "content");
  if (!Array.isArray(content)) return { texts: [], stopped: [] };
  const text = firstTextBlock(content, "$.content", ["text"], fail);
  if (text === undefined) return { texts: [], stopped: [] };
  const reason = own(json, "stop_reason");
  return { texts: [text], stopped: [reason === "end_turn" || reason === "stop_sequence"] };
}

/** openai_responses: the first output[].content[] block of type output_text or text; status completed → stopped. */
function parseResponses(json: unknown, fail: Fail): ParsedCompletions {
  if (!isObject(json)) return { texts: [], stopped: [] };
  const output = own(json, "output");
  if (!Array.isArray(output)) return { texts: [], stopped: [] };
  for (let i = 0; i < output.length; i++) {
    const o: unknown = output[i];
    if (!isObject(o)) return fail(`$.output[${i}]`, o, `${article(jsonTypeOf(o))} where an output item object belongs`);
    const content = own(o, "content");
    if (!Array.isArray(content)) continue;
    const text = firstTextBlock(content, `$.output[${i}].content`, ["output_text", "text"], fail);
    if (text !== undefined) return { texts: [text], stopped: [own(json, "status") === "completed"] };
  }
  return { texts: [], stopped: [] };
}

/** DeepSeek's Chat Completions accept only n = 1; OpenAI's at most 128. */
export function providerNLimit(url: string, model: string | null): number | null {
  // Stryker disable next-line StringLiteral: URLs are validated at construction, so the parse below never fails and this value is never read
  let host = "";
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    // validated at construction
  }
  // Stryker disable next-line StringLiteral: no text but one starting "deepseek-" does, so any stand-in for a missing model reads as "" does
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

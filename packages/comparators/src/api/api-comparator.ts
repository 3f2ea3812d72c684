import { setMaxListeners } from "node:events";
import type { RngStream } from "@pbrl/core-tensor";
import type { CandidateSet, CentralizedAdapter, Comparator, TaskItem } from "@pbrl/preference-data";
import pLimit, { type LimitFunction } from "p-limit";
import { splitJointCompletions } from "../split-joint.js";
import { TaggedCentralizedAdapter } from "../tagged-adapter.js";
import { ApiCallCancelled, ApiComparatorError, displayUrl, makeRedactor, snippet, urlSecrets } from "./errors.js";
import {
  buildBody,
  defaultKeyEnv,
  normalizeApiFormat,
  parseResponse,
  planCounts,
  providerNLimit,
  type ApiFormat,
  type ApiFormatName,
  type ApiGenerationSettings,
  type ApiRequestSpec,
  type ParsedCompletions,
} from "./formats.js";
import { defaultSleep, postJson, type ApiRetryEvent, type SleepFn } from "./transport.js";

/** The comparator_api_* settings (what the config holds), plus test hooks. */
export interface ApiComparatorSettings {
  /** comparator_api_format: generic, openai, anthropic, openai_responses, or an alias. */
  format: ApiFormatName;
  /** comparator_api_url: the full endpoint, e.g. https://api.anthropic.com/v1/messages. */
  url: string;
  /** comparator_api_model: required by openai, anthropic and openai_responses. */
  model?: string | null;
  /**
   * comparator_api_key_env: the NAME of the environment variable holding the key. Default
   * ANTHROPIC_API_KEY (anthropic), OPENAI_API_KEY (openai, openai_responses), none (generic).
   */
  keyEnv?: string | null;
  /** comparator_api_key_header (default Authorization; anthropic sends x-api-key instead). */
  keyHeader?: string;
  /** comparator_api_key_prefix (default Bearer; may be empty; anthropic drops Bearer). */
  keyPrefix?: string;
  /** comparator_api_headers: extra headers; one named like the key header is an error. */
  headers?: Readonly<Record<string, string>> | null;
  /** comparator_api_extra_body: merged over every request body; a null value removes a field. */
  extraBody?: Readonly<Record<string, unknown>> | null;
  /** comparator_api_timeout, seconds per HTTP attempt (default 120). */
  timeoutSeconds?: number;
  /** comparator_api_max_concurrency: requests in flight at once per comparator (default 4). */
  maxConcurrency?: number;
  /** comparator_api_max_retries: retries after the first attempt of each request (default 5). */
  maxRetries?: number;
  /** comparator_api_max_n_per_request: cap on `n` (openai) / num_return_sequences (generic). */
  maxNPerRequest?: number | null;
  /** comparator_api_allow_partial: accept fewer completions than asked (default false). */
  allowPartial?: boolean;
  /** comparator_api_response_field: dotted path to the completions (generic; default "completions"). */
  responseField?: string;
  /** Where the key variable is looked up (default process.env). Read once, at construction. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Jitter source for retry backoff (default Math.random). Pass a dedicated stream, not one that samples. */
  rng?: RngStream;
  /** Waits between retries (default real timers). */
  sleep?: SleepFn;
  /** First backoff step in seconds (default 1); retry r waits about base·2^r, equal-jittered. */
  backoffBaseSeconds?: number;
  /** Largest backoff step in seconds (default 60). */
  backoffMaxSeconds?: number;
  /** A Retry-After longer than this (seconds, default 600) fails at once instead of waiting. */
  maxRetryAfterSeconds?: number;
  /** Called before each retry (no credentials in the event), e.g. to log it. */
  onRetry?: (e: ApiRetryEvent) => void;
}

export interface ApiComparatorOptions extends ApiComparatorSettings {
  /** The trainer's sampling settings (max_new_tokens, temperature, top_p, top_k). */
  generation: ApiGenerationSettings;
  /** comparator_generation_mode (default decentralized). */
  generationMode?: "decentralized" | "centralized";
  /** comparator_centralized_agent_index: agent_idx of centralized generic requests (default 0). */
  centralizedAgentIndex?: number;
  /** Centralized mode's adapter (default TaggedCentralizedAdapter). */
  adapter?: CentralizedAdapter;
}

/** Counters since construction. */
export interface ApiComparatorStats {
  /** HTTP attempts, retries included. */
  requests: number;
  retries: number;
  /** Completions received and kept. */
  completions: number;
}

/** One prompt that needs `n` completions: an agent's own prompt, or an item's joint prompt. */
interface Target {
  item: number;
  /** Agent index (decentralized), or null for the joint prompt. */
  agent: number | null;
  prompt: string;
  agentIdx: number;
  counts: number[];
}

const KEY_ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * comparator_policy="api": the other side of every comparison is a remote model. Decentralized,
 * each agent's own prompt is sent; centralized, one joint prompt per item (from the adapter), whose
 * completions are split into role responses (unparseable ones become invalid candidates).
 *
 * All requests of a sample() call (items × agents × requests) share one p-limit bound. Each
 * request is retried on 429, 408, 5xx, timeouts and connection failures. A response with fewer
 * completions than asked is an error unless allowPartial; then each item keeps what came back,
 * every agent cut to the smallest count of that item so candidate indices stay aligned.
 *
 * The key is read once from the environment and held in a private field; it is never part of the
 * description, errors, events or JSON.stringify(comparator).
 */
export class ApiComparator implements Comparator {
  readonly description: string;
  readonly format: ApiFormat;
  /** The URL as messages show it (no userinfo, key-like query values replaced). */
  readonly displayUrl: string;
  readonly model: string | null;
  readonly generationMode: "decentralized" | "centralized";
  readonly allowPartial: boolean;

  readonly #url: string;
  readonly #authHeader: string | null;
  readonly #authValue: string | null;
  readonly #headers: Record<string, string>;
  readonly #extraBody: Readonly<Record<string, unknown>> | null;
  readonly #generation: ApiGenerationSettings;
  readonly #centralizedAgentIndex: number;
  readonly #adapter: CentralizedAdapter;
  readonly #responseField: string;
  readonly #maxNPerRequest: number | null;
  readonly #timeoutMs: number;
  readonly #retry: { maxRetries: number; baseMs: number; maxMs: number; maxRetryAfterMs: number };
  readonly #limit: LimitFunction;
  readonly #random: () => number;
  readonly #sleep: SleepFn;
  readonly #onRetry: ((e: ApiRetryEvent) => void) | undefined;
  readonly #redact: (text: string) => string;
  readonly #stats: ApiComparatorStats = { requests: 0, retries: 0, completions: 0 };

  constructor(o: ApiComparatorOptions) {
    this.format = normalizeApiFormat(o.format);
    const format = this.format;
    this.#url = checkUrl(o.url);
    this.model = o.model === undefined || o.model === null || o.model.trim() === "" ? null : o.model.trim();
    if (this.model === null && format !== "generic") throw new Error(`comparator_api_model is required with comparator_api_format="${format}" (e.g. ${exampleModel(format)})`);
    this.generationMode = o.generationMode ?? "decentralized";
    if (this.generationMode !== "decentralized" && this.generationMode !== "centralized") throw new Error(`comparator_generation_mode: the API comparator supports "decentralized" and "centralized", got ${JSON.stringify(this.generationMode)}`);
    this.#centralizedAgentIndex = nonNegativeInt(o.centralizedAgentIndex ?? 0, "comparator_centralized_agent_index");
    this.#adapter = o.adapter ?? new TaggedCentralizedAdapter();
    this.allowPartial = o.allowPartial ?? false;
    this.#responseField = o.responseField ?? "completions";
    if (typeof this.#responseField !== "string" || this.#responseField.trim() === "") throw new Error("comparator_api_response_field must be a non-empty dotted path");
    this.#maxNPerRequest = o.maxNPerRequest === undefined || o.maxNPerRequest === null ? null : positiveInt(o.maxNPerRequest, "comparator_api_max_n_per_request");
    const timeout = o.timeoutSeconds ?? 120;
    if (!(Number.isFinite(timeout) && timeout > 0)) throw new Error(`comparator_api_timeout must be a positive number of seconds, got ${timeout}`);
    this.#timeoutMs = timeout * 1000;
    this.#retry = {
      maxRetries: nonNegativeInt(o.maxRetries ?? 5, "comparator_api_max_retries"),
      baseMs: nonNegativeNumber(o.backoffBaseSeconds ?? 1, "backoffBaseSeconds") * 1000,
      maxMs: nonNegativeNumber(o.backoffMaxSeconds ?? 60, "backoffMaxSeconds") * 1000,
      maxRetryAfterMs: nonNegativeNumber(o.maxRetryAfterSeconds ?? 600, "maxRetryAfterSeconds") * 1000,
    };
    this.#limit = pLimit(positiveInt(o.maxConcurrency ?? 4, "comparator_api_max_concurrency"));
    const rng = o.rng;
    this.#random = rng === undefined ? Math.random : () => rng.random();
    this.#sleep = o.sleep ?? defaultSleep;
    this.#onRetry = o.onRetry;
    this.#extraBody = o.extraBody ?? null;
    if (this.#extraBody !== null && (typeof this.#extraBody !== "object" || Array.isArray(this.#extraBody))) throw new Error("comparator_api_extra_body must be a JSON object");
    this.#generation = { maxNewTokens: o.generation.maxNewTokens, temperature: o.generation.temperature, topP: o.generation.topP, topK: o.generation.topK };

    // The key: read once, kept only here.
    const keyEnv = o.keyEnv === undefined || o.keyEnv === null || o.keyEnv.trim() === "" ? defaultKeyEnv(format) : o.keyEnv.trim();
    if (keyEnv !== null && !KEY_ENV_NAME.test(keyEnv)) {
      // Never echo the value: it may be a key pasted into the wrong field.
      throw new Error("comparator_api_key_env must be the NAME of an environment variable (letters, digits and _), not a key; put the key in that variable");
    }
    let key: string | null = null;
    if (keyEnv !== null) {
      const raw = (o.env ?? process.env)[keyEnv];
      key = raw === undefined ? null : raw.trim();
      if (key === null || key === "") {
        const why = o.keyEnv === undefined || o.keyEnv === null || o.keyEnv.trim() === "" ? `the ${format} format reads its API key from ${keyEnv} by default` : "comparator_api_key_env names it";
        throw new Error(`comparator API (${format}): the environment variable ${keyEnv} is not set or is empty (${why}); export ${keyEnv}=<your key> or set comparator_api_key_env to the variable that holds it`);
      }
      if (/[\r\n\0]/.test(key)) throw new Error(`comparator API (${format}): the value of ${keyEnv} contains a line break or NUL and cannot be sent in a header`);
    }
    // Scrubbed from every message: the key, and key-like query values of the URL (a server may echo them).
    this.#redact = makeRedactor([key, ...urlSecrets(this.#url)]);
    this.displayUrl = this.#redact(displayUrl(this.#url));

    // Headers without the key; the auth header is added per request.
    let authHeader: string | null = null;
    let authValue: string | null = null;
    if (key !== null) {
      let name = (o.keyHeader ?? "Authorization").trim();
      let prefix = (o.keyPrefix ?? "Bearer").trim();
      if (format === "anthropic") {
        if (name.toLowerCase() === "authorization") name = "x-api-key";
        if (prefix.toLowerCase() === "bearer") prefix = "";
      }
      if (!HEADER_NAME.test(name)) throw new Error(`comparator_api_key_header: ${JSON.stringify(name)} is not a valid header name`);
      authHeader = name;
      authValue = prefix === "" ? key : `${prefix} ${key}`;
    }
    this.#authHeader = authHeader;
    this.#authValue = authValue;
    this.#headers = this.buildHeaders(o.headers ?? null, authHeader);

    const what = [format, this.model, this.displayUrl].filter((s) => s !== null).join(", ");
    this.description = this.generationMode === "centralized" ? `centralized api (${what}; one joint prompt, agent_idx ${this.#centralizedAgentIndex})` : `api (${what})`;
  }

  /** Counters since construction (requests, retries, completions kept). */
  get stats(): ApiComparatorStats {
    return { ...this.#stats };
  }

  /** What JSON.stringify shows: the public settings, never the key or headers. */
  toJSON(): Record<string, unknown> {
    return { description: this.description, format: this.format, url: this.displayUrl, model: this.model, generationMode: this.generationMode, allowPartial: this.allowPartial };
  }

  beginRound(_round: number): Promise<void> {
    return Promise.resolve();
  }

  endRound(): Promise<void> {
    return Promise.resolve();
  }

  dispose(): void {
    // Nothing is held between calls.
  }

  async sample(items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    if (prompts.length !== items.length) throw new RangeError(`${this.description}: ${prompts.length} prompt lists for ${items.length} items`);
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`${this.description}: the number of candidates must be a non-negative integer, got ${n}`);
    const limitN = providerNLimit(this.#url, this.model);
    const targets: Target[] = [];
    items.forEach((item, k) => {
      const agentPrompts = prompts[k]!;
      agentPrompts.forEach((p, a) => {
        if (typeof p !== "string") throw new TypeError(`${this.description}: the prompt of agent ${a} for item ${k} is not a string`);
      });
      const counts = planCounts(this.format, n, this.#maxNPerRequest, limitN);
      if (this.generationMode === "decentralized") {
        agentPrompts.forEach((prompt, a) => targets.push({ item: k, agent: a, prompt, agentIdx: a, counts }));
      } else {
        if (this.#centralizedAgentIndex >= agentPrompts.length) throw new RangeError(`comparator_centralized_agent_index: agent index ${this.#centralizedAgentIndex} is out of range; there are ${agentPrompts.length} agents`);
        const joint = this.#adapter.buildPrompt(item, agentPrompts);
        if (typeof joint !== "string" || joint.trim() === "") throw new TypeError(`${this.description}: the centralized adapter built an empty joint prompt for item ${k}; buildPrompt must return a non-empty string`);
        targets.push({ item: k, agent: null, prompt: joint, agentIdx: this.#centralizedAgentIndex, counts });
      }
    });

    const jobs: { target: number; spec: ApiRequestSpec }[] = [];
    targets.forEach((t, ti) => {
      for (const count of t.counts) jobs.push({ target: ti, spec: { prompt: t.prompt, agentIdx: t.agentIdx, batchItem: items[t.item], count } });
    });
    const replies = await this.runAll(jobs.map((j) => (signal: AbortSignal) => this.request(j.spec, signal)));

    // Per target: completions in request order, then the count check.
    const got: ParsedCompletions[] = targets.map(() => ({ texts: [], stopped: [] }));
    const short: { asked: number; got: number; body: string }[][] = targets.map(() => []);
    jobs.forEach((j, i) => {
      const r = replies[i]!;
      const g = got[j.target]!;
      g.texts.push(...r.parsed.texts.slice(0, j.spec.count));
      g.stopped.push(...r.parsed.stopped.slice(0, j.spec.count));
      if (r.parsed.texts.length < j.spec.count) short[j.target]!.push({ asked: j.spec.count, got: r.parsed.texts.length, body: r.text });
    });
    targets.forEach((t, ti) => {
      const received = got[ti]!.texts.length;
      if (received < n && !this.allowPartial) throw this.countError(t, n, received, short[ti]!);
    });

    const sets = items.map((item, k): CandidateSet => {
      const mine = targets.map((t, ti) => ({ t, g: got[ti]! })).filter((x) => x.t.item === k);
      if (this.generationMode === "centralized") {
        const g = mine[0]!.g;
        const numAgents = prompts[k]!.length;
        const split = splitJointCompletions(this.#adapter, g.texts, item, numAgents);
        const stopped = g.stopped.map((s, j) => split.valid[j]! && s);
        return { texts: split.texts, stopped: split.texts.map(() => [...stopped]), valid: split.valid };
      }
      if (mine.length === 0) return { texts: [], stopped: [], valid: [] };
      const m = Math.min(...mine.map((x) => x.g.texts.length));
      return { texts: mine.map((x) => x.g.texts.slice(0, m)), stopped: mine.map((x) => x.g.stopped.slice(0, m)), valid: Array.from({ length: m }, () => true) };
    });
    // Completions the API returned and this call kept: joint ones (centralized) or per agent.
    for (const s of sets) this.#stats.completions += this.generationMode === "centralized" ? s.valid.length : s.valid.length * s.texts.length;
    return sets;
  }

  /** One request, retried by the transport; the reply parsed in this format. */
  private async request(spec: ApiRequestSpec, signal: AbortSignal): Promise<{ parsed: ParsedCompletions; text: string }> {
    const body = buildBody(this.format, spec, { model: this.model, generation: this.#generation, extraBody: this.#extraBody });
    const headers = { ...this.#headers };
    if (this.#authHeader !== null && this.#authValue !== null) headers[this.#authHeader] = this.#authValue;
    const r = await postJson({
      format: this.format,
      url: this.#url,
      displayUrl: this.displayUrl,
      headers,
      body,
      timeoutMs: this.#timeoutMs,
      retry: this.#retry,
      random: this.#random,
      sleep: this.#sleep,
      redact: this.#redact,
      signal,
      onRetry: this.#onRetry,
      counters: this.#stats,
    });
    return { parsed: parseResponse(this.format, r.json, this.#responseField), text: r.text };
  }

  /**
   * Runs every job under the comparator's concurrency bound. The first failure cancels the jobs
   * still queued or waiting to retry (in-flight requests are aborted); sample() rejects with it
   * once every job has settled, so no request outlives the call.
   */
  private async runAll<T>(jobs: readonly ((signal: AbortSignal) => Promise<T>)[]): Promise<T[]> {
    const ctrl = new AbortController();
    setMaxListeners(0, ctrl.signal); // one listener per request in flight or waiting to retry
    let failure: { error: unknown } | null = null;
    const settled = await Promise.allSettled(
      jobs.map((job) =>
        this.#limit(async () => {
          if (ctrl.signal.aborted) throw new ApiCallCancelled();
          try {
            return await job(ctrl.signal);
          } catch (error) {
            if (failure === null && !(error instanceof ApiCallCancelled)) {
              failure = { error };
              ctrl.abort();
            }
            throw error;
          }
        }),
      ),
    );
    if (failure !== null) throw (failure as { error: unknown }).error;
    return settled.map((s) => {
      if (s.status === "rejected") throw s.reason;
      return s.value;
    });
  }

  private countError(t: Target, asked: number, received: number, short: readonly { asked: number; got: number; body: string }[]): ApiComparatorError {
    const who = t.agent === null ? `the joint prompt of item ${t.item}` : `agent ${t.agent} of item ${t.item}`;
    const requests = t.counts.length === 1 ? "1 request" : `${t.counts.length} requests`;
    let kind = `too few completions for ${who}: asked for ${asked} (${requests}), received ${received}`;
    if (this.format === "openai" && short.some((s) => s.asked > 1 && s.got === 1)) kind += "; if the server ignores n, set comparator_api_max_n_per_request=1";
    kind += "; set comparator_api_allow_partial=true to accept fewer";
    const first = short[0];
    return new ApiComparatorError({ format: this.format, url: this.displayUrl, kind, attempts: 0, detail: first === undefined ? undefined : `a short response began: ${snippet(first.body, this.#redact)}` });
  }

  /** Content-Type, the user's headers, anthropic-version; a user header named like the key header is an error. */
  private buildHeaders(user: Readonly<Record<string, string>> | null, authHeader: string | null): Record<string, string> {
    const out: Record<string, string> = { "Content-Type": "application/json" };
    const lower = new Set<string>();
    for (const [name, value] of Object.entries(user ?? {})) {
      if (!HEADER_NAME.test(name)) throw new Error(`comparator_api_headers: ${JSON.stringify(name)} is not a valid header name`);
      if (typeof value !== "string" || /[\r\n\0]/.test(value)) throw new Error(`comparator_api_headers: the value of ${name} must be a string without line breaks`);
      const l = name.toLowerCase();
      if (lower.has(l)) throw new Error(`comparator_api_headers: ${name} is given twice (header names are case-insensitive)`);
      lower.add(l);
      if (authHeader !== null && l === authHeader.toLowerCase()) {
        throw new Error(`comparator_api_headers sets ${name}, which carries the API key (from the environment variable); remove it from comparator_api_headers, or set comparator_api_key_header to another header`);
      }
      if (l === "content-type") {
        if (!/^application\/json\b/i.test(value.trim())) throw new Error(`comparator_api_headers: Content-Type must be application/json (the body is JSON), got ${JSON.stringify(value)}`);
        delete out["Content-Type"];
      }
      out[name] = value;
    }
    if (this.format === "anthropic" && !lower.has("anthropic-version")) out["anthropic-version"] = "2023-06-01";
    return out;
  }
}

function checkUrl(url: string): string {
  if (typeof url !== "string" || url.trim() === "") throw new Error("comparator_api_url is required for the API comparator");
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    throw new Error("comparator_api_url is not a valid absolute URL (expected e.g. https://api.openai.com/v1/chat/completions)");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error(`comparator_api_url must be an http:// or https:// URL, got ${u.protocol}`);
  if (u.username !== "" || u.password !== "") throw new Error("comparator_api_url must not contain credentials (user:password@); put the key in the environment variable named by comparator_api_key_env");
  return u.toString();
}

function exampleModel(format: ApiFormat): string {
  switch (format) {
    case "anthropic":
      return "claude-sonnet-4-20250514";
    case "openai_responses":
      return "gpt-5.1-codex";
    default:
      return "gpt-4o-mini or deepseek-chat";
  }
}

function positiveInt(v: number, field: string): number {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${field} must be an integer ≥ 1, got ${v}`);
  return v;
}

function nonNegativeInt(v: number, field: string): number {
  if (!Number.isInteger(v) || v < 0) throw new Error(`${field} must be an integer ≥ 0, got ${v}`);
  return v;
}

function nonNegativeNumber(v: number, field: string): number {
  if (!(Number.isFinite(v) && v >= 0)) throw new Error(`${field} must be a finite number ≥ 0, got ${v}`);
  return v;
}

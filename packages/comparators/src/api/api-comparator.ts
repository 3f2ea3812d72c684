import { setMaxListeners } from "node:events";
import type { RngStream } from "@pbrl/core-tensor";
import type { CandidateSet, CentralizedAdapter, Comparator, TaskItem } from "@pbrl/preference-data";
import pLimit, { type LimitFunction } from "p-limit";
import { splitJointCompletions } from "../split-joint.js";
import { TaggedCentralizedAdapter } from "../tagged-adapter.js";
import {
  ApiCallCancelled,
  ApiComparatorError,
  ApiSettingsError,
  ApiTooManyCompletionsError,
  MIN_SCRUBBED_SECRET_CHARS,
  REDACTED,
  displayUrl,
  headerSecrets,
  makeRedactor,
  snippet,
  urlSecrets,
} from "./errors.js";
import {
  buildBody,
  defaultKeyEnv,
  normalizeApiFormat,
  parseResponseBody,
  planCounts,
  providerNLimit,
  type ApiFormat,
  type ApiFormatName,
  type ApiGenerationSettings,
  type ApiRequestSpec,
  type ParsedCompletions,
} from "./formats.js";
import { defaultSleep, postJson, type ApiRetryEvent, type SleepFn } from "./transport.js";
import { truncateToTokens, type ApiTokenizer } from "./truncate.js";
import {
  checkUrl,
  exampleModel,
  HEADER_NAME,
  KEY_ENV_NAME,
  maxResponseBytes,
  nonNegativeInt,
  nonNegativeNumber,
  positiveInt,
  timeoutMs,
} from "./setting-checks.js";

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
  /**
   * comparator_api_max_response_bytes: the largest response body read, in bytes after decoding
   * (default 8 MiB, at least 1024, at most 256 MiB). A larger one fails with
   * ApiResponseTooLargeError as soon as it passes the limit, and is not retried.
   */
  maxResponseBytes?: number;
  /**
   * Where the comparator's warnings and its once-a-round line go (default console.warn): how many
   * completions were cut to max_new_tokens, a credential echoed by the server, truncation
   * impossible without tokenizers. Lines carry no credentials.
   */
  log?: (line: string) => void;
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
  /**
   * The agents' tokenizers, by agent index (createComparator passes the agents'): each remote
   * completion is cut to generation.maxNewTokens tokens of the tokenizer of the agent whose role
   * it fills (centralized: the joint completion with the centralized agent's, then each role's
   * text with its agent's). Without them completions are not truncated, and a warning says so.
   */
  tokenizers?: readonly ApiTokenizer[];
}

/** Counters since construction. */
export interface ApiComparatorStats {
  /** HTTP attempts, retries included. */
  requests: number;
  retries: number;
  /** Completions received and kept. */
  completions: number;
  /** Completions cut to max_new_tokens (centralized: joint completions of which anything was cut). */
  truncated: number;
  /** Completions in which a credential echoed by the server was replaced by [REDACTED]. */
  scrubbed: number;
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
  /** Scrubs credentials from completions (only secrets long enough not to be ordinary words). */
  readonly #scrub: (text: string) => string;
  readonly #maxResponseBytes: number;
  readonly #tokenizers: readonly ApiTokenizer[] | null;
  readonly #log: (line: string) => void;
  readonly #stats: ApiComparatorStats = { requests: 0, retries: 0, completions: 0, truncated: 0, scrubbed: 0 };
  /** Completions checked against max_new_tokens this round, and how many were cut: one log line per round. */
  #round = { checked: 0, truncated: 0 };
  /** Warnings said once per comparator, not once per completion. */
  readonly #warned = new Set<"echo" | "no-tokenizers">();

  constructor(o: ApiComparatorOptions) {
    this.format = normalizeApiFormat(o.format);
    const format = this.format;
    this.#url = checkUrl(o.url);
    this.model = o.model === undefined || o.model === null || o.model.trim() === "" ? null : o.model.trim();
    if (this.model === null && format !== "generic")
      throw new ApiSettingsError(`comparator_api_model is required with comparator_api_format="${format}" (e.g. ${exampleModel(format)})`);
    this.generationMode = o.generationMode ?? "decentralized";
    if (this.generationMode !== "decentralized" && this.generationMode !== "centralized")
      throw new ApiSettingsError(
        `comparator_generation_mode: the API comparator supports "decentralized" and "centralized", got ${JSON.stringify(this.generationMode)}`,
      );
    this.#centralizedAgentIndex = nonNegativeInt(o.centralizedAgentIndex ?? 0, "comparator_centralized_agent_index");
    this.#adapter = o.adapter ?? new TaggedCentralizedAdapter();
    this.allowPartial = o.allowPartial ?? false;
    this.#responseField = o.responseField ?? "completions";
    if (typeof this.#responseField !== "string" || this.#responseField.trim() === "")
      throw new ApiSettingsError("comparator_api_response_field must be a non-empty dotted path");
    this.#maxNPerRequest =
      o.maxNPerRequest === undefined || o.maxNPerRequest === null ? null : positiveInt(o.maxNPerRequest, "comparator_api_max_n_per_request");
    this.#timeoutMs = timeoutMs(o.timeoutSeconds);
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
    if (this.#extraBody !== null && (typeof this.#extraBody !== "object" || Array.isArray(this.#extraBody)))
      throw new ApiSettingsError("comparator_api_extra_body must be a JSON object");
    this.#generation = {
      maxNewTokens: positiveInt(o.generation.maxNewTokens, "max_new_tokens"),
      temperature: o.generation.temperature,
      topP: o.generation.topP,
      topK: o.generation.topK,
    };
    this.#maxResponseBytes = maxResponseBytes(o.maxResponseBytes);
    this.#tokenizers = o.tokenizers === undefined || o.tokenizers.length === 0 ? null : [...o.tokenizers];
    this.#log = o.log ?? ((line) => console.warn(line));

    // The key: read once, kept only here.
    const keyEnv = o.keyEnv === undefined || o.keyEnv === null || o.keyEnv.trim() === "" ? defaultKeyEnv(format) : o.keyEnv.trim();
    if (keyEnv !== null && !KEY_ENV_NAME.test(keyEnv)) {
      // Never echo the value: it may be a key pasted into the wrong field.
      throw new ApiSettingsError(
        "comparator_api_key_env must be the NAME of an environment variable (letters, digits and _), not a key; put the key in that variable",
      );
    }
    let key: string | null = null;
    if (keyEnv !== null) {
      const raw = (o.env ?? process.env)[keyEnv];
      key = raw === undefined ? null : raw.trim();
      if (key === null || key === "") {
        const why =
          o.keyEnv === undefined || o.keyEnv === null || o.keyEnv.trim() === ""
            ? `the ${format} format reads its API key from ${keyEnv} by default`
            : "comparator_api_key_env names it";
        throw new ApiSettingsError(
          `comparator API (${format}): the environment variable ${keyEnv} is not set or is empty (${why}); export ${keyEnv}=<your key> or set comparator_api_key_env to the variable that holds it`,
        );
      }
      if (/[\r\n\0]/.test(key))
        throw new ApiSettingsError(`comparator API (${format}): the value of ${keyEnv} contains a line break or NUL and cannot be sent in a header`);
    }
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
      if (!HEADER_NAME.test(name)) throw new ApiSettingsError(`comparator_api_key_header: ${JSON.stringify(name)} is not a valid header name`);
      authHeader = name;
      authValue = prefix === "" ? key : `${prefix} ${key}`;
    }
    this.#authHeader = authHeader;
    this.#authValue = authValue;
    this.#headers = this.buildHeaders(o.headers ?? null, authHeader);
    // Scrubbed from every message and completion, since a server may echo any of them: the key,
    // key-like query values of the URL, and credential header values (only long ones: a header
    // value "v1" must not be cut out of "/v1/messages").
    const longEnough = (c: string | null): c is string => c !== null && c.length >= MIN_SCRUBBED_SECRET_CHARS;
    const credentials = [key, ...urlSecrets(this.#url), ...headerSecrets(o.headers ?? {}).filter(longEnough)];
    this.#redact = makeRedactor(credentials);
    this.#scrub = makeRedactor(credentials.filter(longEnough));
    this.displayUrl = this.#redact(displayUrl(this.#url));

    const what = [format, this.model, this.displayUrl].filter((s) => s !== null).join(", ");
    this.description =
      this.generationMode === "centralized" ? `centralized api (${what}; one joint prompt, agent_idx ${this.#centralizedAgentIndex})` : `api (${what})`;
  }

  /** Counters since construction (requests, retries, completions kept). */
  get stats(): ApiComparatorStats {
    return { ...this.#stats };
  }

  /** What JSON.stringify shows: the public settings, never the key or headers. */
  toJSON(): Record<string, unknown> {
    return {
      description: this.description,
      format: this.format,
      url: this.displayUrl,
      model: this.model,
      generationMode: this.generationMode,
      allowPartial: this.allowPartial,
    };
  }

  beginRound(_round: number): Promise<void> {
    this.#round = { checked: 0, truncated: 0 };
    return Promise.resolve();
  }

  /** Says how many completions of the round were cut to max_new_tokens: one line, not one per completion. */
  endRound(): Promise<void> {
    const { checked, truncated } = this.#round;
    if (truncated > 0) {
      this.#log(
        `pbrl: comparator API (${this.format}, ${this.displayUrl}): ${truncated} of ${checked} completions this round were longer than max_new_tokens=${this.#generation.maxNewTokens} tokens and were cut to it (counted as not stopped)`,
      );
    }
    this.#round = { checked: 0, truncated: 0 };
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
        if (this.#centralizedAgentIndex >= agentPrompts.length)
          throw new RangeError(
            `comparator_centralized_agent_index: agent index ${this.#centralizedAgentIndex} is out of range; there are ${agentPrompts.length} agents`,
          );
        const joint = this.#adapter.buildPrompt(item, agentPrompts);
        if (typeof joint !== "string" || joint.trim() === "")
          throw new TypeError(
            `${this.description}: the centralized adapter built an empty joint prompt for item ${k}; buildPrompt must return a non-empty string`,
          );
        targets.push({ item: k, agent: null, prompt: joint, agentIdx: this.#centralizedAgentIndex, counts });
      }
    });

    this.checkTokenizers(prompts);
    const jobs: { target: number; spec: ApiRequestSpec }[] = [];
    targets.forEach((t, ti) => {
      for (const count of t.counts) jobs.push({ target: ti, spec: { prompt: t.prompt, agentIdx: t.agentIdx, batchItem: items[t.item], count } });
    });
    const replies = await this.runAll(jobs.map((j) => (signal: AbortSignal) => this.request(j.spec, targets[j.target]!, signal)));

    // Per target: completions in request order, then the count check.
    const got: ParsedCompletions[] = targets.map(() => ({ texts: [], stopped: [] }));
    const short: { asked: number; got: number; body: string }[][] = targets.map(() => []);
    jobs.forEach((j, i) => {
      const r = replies[i]!;
      const g = got[j.target]!;
      g.texts.push(...r.parsed.texts);
      g.stopped.push(...r.parsed.stopped);
      if (r.parsed.texts.length < j.spec.count) short[j.target]!.push({ asked: j.spec.count, got: r.parsed.texts.length, body: r.text });
    });
    targets.forEach((t, ti) => {
      const received = got[ti]!.texts.length;
      if (received < n && !this.allowPartial) throw this.countError(t, n, received, short[ti]!);
    });

    const sets = items.map((item, k): CandidateSet => {
      const mine = targets.map((t, ti) => ({ t, g: got[ti]! })).filter((x) => x.t.item === k);
      if (this.generationMode === "centralized") return this.centralizedSet(mine[0]!.g, item, prompts[k]!.length);
      if (mine.length === 0) return { texts: [], stopped: [], valid: [] };
      const cut = mine.map((x) => this.truncateAll(x.g, x.t.agent!));
      const m = Math.min(...cut.map((g) => g.texts.length));
      return { texts: cut.map((g) => g.texts.slice(0, m)), stopped: cut.map((g) => g.stopped.slice(0, m)), valid: Array.from({ length: m }, () => true) };
    });
    // Completions the API returned and this call kept: joint ones (centralized) or per agent.
    for (const s of sets) this.#stats.completions += this.generationMode === "centralized" ? s.valid.length : s.valid.length * s.texts.length;
    return sets;
  }

  /**
   * One item's candidates from its joint completions: each cut to the budget with the
   * centralized agent's tokenizer (the budget the local centralized comparator generates
   * within), split into roles, then each role's text cut with its own agent's tokenizer.
   */
  private centralizedSet(g: ParsedCompletions, item: TaskItem, numAgents: number): CandidateSet {
    const joint = this.truncateAll(g, this.#centralizedAgentIndex, false);
    const split = splitJointCompletions(this.#adapter, joint.texts, item, numAgents);
    const cutAny = joint.cut.slice();
    const roles = split.texts.map((roleTexts, a) => {
      const r = this.truncateAll({ texts: roleTexts, stopped: joint.stopped.map((s, j) => split.valid[j]! && s) }, a, false);
      r.cut.forEach((c, j) => (cutAny[j] = cutAny[j]! || c));
      return r;
    });
    this.countTruncated(cutAny);
    return { texts: roles.map((r) => r.texts), stopped: roles.map((r) => r.stopped), valid: split.valid };
  }

  /**
   * Each completion cut to max_new_tokens tokens of agent `agent`'s tokenizer; a cut one no
   * longer counts as stopped (it ended at the limit, as an agent's would). `count` false leaves
   * the round's tally to the caller (centralized counts each joint completion once).
   */
  private truncateAll(g: ParsedCompletions, agent: number, count = true): ParsedCompletions & { cut: boolean[] } {
    const tokenizer = this.#tokenizers?.[agent];
    if (tokenizer === undefined) return { texts: g.texts, stopped: g.stopped, cut: g.texts.map(() => false) };
    const out = g.texts.map((t) => truncateToTokens(t, tokenizer, this.#generation.maxNewTokens));
    const cut = out.map((r) => r.truncated);
    if (count) this.countTruncated(cut);
    return { texts: out.map((r) => r.text), stopped: g.stopped.map((s, j) => s && !cut[j]), cut };
  }

  private countTruncated(cut: readonly boolean[]): void {
    if (this.#tokenizers === null) return;
    const n = cut.filter((c) => c).length;
    this.#round.checked += cut.length;
    this.#round.truncated += n;
    this.#stats.truncated += n;
  }

  /** Every agent the call needs has a tokenizer; with none given at all, a warning (once) that nothing is truncated. */
  private checkTokenizers(prompts: readonly (readonly string[])[]): void {
    if (this.#tokenizers === null) {
      this.warnOnce(
        "no-tokenizers",
        `pbrl: comparator API (${this.format}, ${this.displayUrl}): built without the agents' tokenizers, so remote completions are not cut to max_new_tokens=${this.#generation.maxNewTokens}; build it with createComparator({ agents, ... }) or pass ApiComparatorOptions.tokenizers`,
      );
      return;
    }
    const agents = Math.max(0, ...prompts.map((p) => p.length));
    const needed = this.generationMode === "centralized" ? Math.max(agents, this.#centralizedAgentIndex + 1) : agents;
    if (needed > this.#tokenizers.length) {
      throw new RangeError(
        `${this.description}: the prompts are for ${needed} agents but the comparator has ${this.#tokenizers.length} agents' tokenizers (ApiComparatorOptions.tokenizers); pass one per agent`,
      );
    }
  }

  private warnOnce(what: "echo" | "no-tokenizers", line: string): void {
    if (this.#warned.has(what)) return;
    this.#warned.add(what);
    this.#log(line);
  }

  /**
   * One request, retried by the transport; the reply parsed in this format, credentials echoed by
   * the server scrubbed, and more completions than asked refused (never dropped).
   */
  private async request(spec: ApiRequestSpec, target: Target, signal: AbortSignal): Promise<{ parsed: ParsedCompletions; text: string }> {
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
      maxResponseBytes: this.#maxResponseBytes,
    });
    const parsed = parseResponseBody(this.format, r.text, this.#responseField, {
      url: this.displayUrl,
      status: r.status,
      attempts: r.attempts,
      redact: this.#redact,
    });
    if (parsed.texts.length > spec.count) throw this.tooManyError(target, spec.count, parsed.texts.length);
    return { parsed: { texts: parsed.texts.map((t) => this.scrubCompletion(t)), stopped: parsed.stopped }, text: r.text };
  }

  /** The completion with every credential replaced by [REDACTED]; the first echo is logged, once. */
  private scrubCompletion(text: string): string {
    const clean = this.#scrub(text);
    if (clean === text) return text;
    this.#stats.scrubbed += 1;
    this.warnOnce(
      "echo",
      `pbrl: comparator API (${this.format}, ${this.displayUrl}): the server echoed a credential (the API key, a credential header or a key-like URL parameter) inside a completion; it was replaced by ${REDACTED} before the completion was used. Check the server: it should never return credentials`,
    );
    return clean;
  }

  private tooManyError(t: Target, requested: number, received: number): ApiTooManyCompletionsError {
    const who = t.agent === null ? `the joint prompt of item ${t.item}` : `agent ${t.agent} of item ${t.item}`;
    const asked = this.format === "openai" ? "n" : this.format === "generic" ? "num_return_sequences" : "one per request";
    const hint = `the server must return exactly the number asked for (${asked}); extra completions are an error, never dropped silently, since which to keep would be a guess`;
    return new ApiTooManyCompletionsError({ format: this.format, url: this.displayUrl, attempts: 0, who, requested, received, hint });
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
    return new ApiComparatorError({
      format: this.format,
      url: this.displayUrl,
      kind,
      attempts: 0,
      detail: first === undefined ? undefined : `a short response began: ${snippet(first.body, this.#redact)}`,
    });
  }

  /** Content-Type, the user's headers, anthropic-version; a user header named like the key header is an error. */
  private buildHeaders(user: Readonly<Record<string, string>> | null, authHeader: string | null): Record<string, string> {
    const out: Record<string, string> = { "Content-Type": "application/json" };
    const lower = new Set<string>();
    for (const [name, value] of Object.entries(user ?? {})) {
      if (!HEADER_NAME.test(name)) throw new ApiSettingsError(`comparator_api_headers: ${JSON.stringify(name)} is not a valid header name`);
      if (typeof value !== "string" || /[\r\n\0]/.test(value))
        throw new ApiSettingsError(`comparator_api_headers: the value of ${name} must be a string without line breaks`);
      const l = name.toLowerCase();
      if (lower.has(l)) throw new ApiSettingsError(`comparator_api_headers: ${name} is given twice (header names are case-insensitive)`);
      lower.add(l);
      if (authHeader !== null && l === authHeader.toLowerCase()) {
        throw new ApiSettingsError(
          `comparator_api_headers sets ${name}, which carries the API key (from the environment variable); remove it from comparator_api_headers, or set comparator_api_key_header to another header`,
        );
      }
      if (l === "content-type") {
        if (!/^application\/json\b/i.test(value.trim()))
          throw new ApiSettingsError(`comparator_api_headers: Content-Type must be application/json (the body is JSON), got ${JSON.stringify(value)}`);
        delete out["Content-Type"];
      }
      out[name] = value;
    }
    if (this.format === "anthropic" && !lower.has("anthropic-version")) out["anthropic-version"] = "2023-06-01";
    return out;
  }
}

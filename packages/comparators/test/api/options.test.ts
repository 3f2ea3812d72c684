import { inspect } from "node:util";
import { RngStream } from "@pbrl/core-tensor";
import { describe, expect, it } from "vitest";
import { ApiComparator, createComparator, normalizeApiFormat, type ApiComparatorOptions, type ApiComparatorSettings } from "../../src/index.js";
import { backoffMs, parseRetryAfter } from "../../src/api/transport.js";
import { planCounts, providerNLimit } from "../../src/api/formats.js";
import { displayUrl } from "../../src/api/errors.js";

const KEY = "sk-test-SECRET-7f3a";
const GEN = { maxNewTokens: 16, temperature: 1, topP: 1, topK: null, maxBatchRows: 4 };
const URL_ = "http://127.0.0.1:9/v1/x";

function make(o: Partial<ApiComparatorOptions>): ApiComparator {
  return new ApiComparator({ format: "openai", url: URL_, model: "m", generation: GEN, env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY }, ...o });
}

/** The error thrown by fn; fails when nothing is thrown. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected an error");
}

describe("construction", () => {
  it("a missing key variable is a clear error naming the variable, never a value", () => {
    const e1 = thrown(() => make({ format: "anthropic", env: {} }));
    expect(e1.message).toContain(
      "the environment variable ANTHROPIC_API_KEY is not set or is empty (the anthropic format reads its API key from ANTHROPIC_API_KEY by default)",
    );
    expect(thrown(() => make({ format: "openai", env: { OPENAI_API_KEY: "  " } })).message).toContain("OPENAI_API_KEY is not set or is empty");
    expect(thrown(() => make({ format: "responses", env: {} })).message).toContain("OPENAI_API_KEY");
    const e2 = thrown(() => make({ format: "generic", keyEnv: "MY_SERVICE_KEY", env: { OTHER: KEY } }));
    expect(e2.message).toContain("the environment variable MY_SERVICE_KEY is not set or is empty (comparator_api_key_env names it)");
    expect(e2.message).not.toContain(KEY);
    // generic needs no key unless asked
    expect(() => make({ format: "generic", env: {} })).not.toThrow();
    // an explicit key env overrides the default one
    expect(() => make({ format: "anthropic", keyEnv: "CLAUDE_KEY", env: { CLAUDE_KEY: KEY } })).not.toThrow();
  });

  it("a key pasted into comparator_api_key_env is refused without being echoed", () => {
    const e = thrown(() => make({ keyEnv: KEY }));
    expect(e.message).toContain("must be the NAME of an environment variable");
    expect(e.message).not.toContain(KEY);
  });

  it("reads the key once, at construction", async () => {
    const env: Record<string, string | undefined> = { OPENAI_API_KEY: KEY };
    const c = make({ env });
    env["OPENAI_API_KEY"] = undefined;
    expect(c.format).toBe("openai");
    await expect(c.beginRound(1)).resolves.toBeUndefined();
  });

  it("a user header named like the key header is an error; without a key it is the user's", () => {
    expect(thrown(() => make({ headers: { authorization: "Bearer other" } })).message).toMatch(
      /comparator_api_headers sets authorization, which carries the API key/,
    );
    expect(thrown(() => make({ format: "anthropic", headers: { "X-Api-Key": "k" } })).message).toMatch(
      /comparator_api_headers sets X-Api-Key, which carries the API key/,
    );
    expect(thrown(() => make({ format: "generic", keyEnv: "K", keyHeader: "X-Token", env: { K: KEY }, headers: { "x-token": "t" } })).message).toMatch(
      /sets x-token/,
    );
    expect(() => make({ format: "generic", headers: { Authorization: "Basic abc" } })).not.toThrow();
    expect(() => make({ format: "anthropic", headers: { Authorization: "Bearer proxy" } })).not.toThrow();
    expect(thrown(() => make({ headers: { "Content-Type": "text/plain" } })).message).toMatch(/Content-Type must be application\/json/);
    expect(() => make({ headers: { "content-type": "application/json; charset=utf-8" } })).not.toThrow();
    expect(thrown(() => make({ headers: { "bad header": "x" } })).message).toMatch(/not a valid header name/);
    expect(thrown(() => make({ headers: { "X-A": "1\r\nX-B: 2" } })).message).toMatch(/without line breaks/);
  });

  it("validates the format name and accepts the aliases", () => {
    const e = thrown(() => make({ format: "openia" as never }));
    expect(e.message).toBe(
      'comparator_api_format: unknown format "openia"; expected one of generic; openai (aliases: openai_chat, chat); anthropic (aliases: anthropic_messages, messages); openai_responses (aliases: responses, codex)',
    );
    expect(
      [
        "generic",
        "openai",
        "openai_chat",
        "chat",
        " OpenAI_Chat ",
        "anthropic",
        "anthropic_messages",
        "messages",
        "openai_responses",
        "responses",
        "CODEX",
      ].map(normalizeApiFormat),
    ).toEqual([
      "generic",
      "openai",
      "openai",
      "openai",
      "openai",
      "anthropic",
      "anthropic",
      "anthropic",
      "openai_responses",
      "openai_responses",
      "openai_responses",
    ]);
  });

  it("native formats need a model; URLs must be http(s) without credentials; numbers are checked", () => {
    expect(thrown(() => make({ format: "anthropic", model: null })).message).toBe(
      'comparator_api_model is required with comparator_api_format="anthropic" (e.g. claude-sonnet-4-20250514)',
    );
    expect(() => make({ format: "generic", model: undefined })).not.toThrow();
    const cred = thrown(() => make({ url: `https://user:${KEY}@api.example.com/v1` }));
    expect(cred.message).toContain("must not contain credentials");
    expect(cred.message).not.toContain(KEY);
    expect(thrown(() => make({ url: "ftp://x/y" })).message).toContain("http:// or https://");
    expect(thrown(() => make({ url: "not a url" })).message).toContain("not a valid absolute URL");
    expect(thrown(() => make({ maxConcurrency: 0 })).message).toContain("comparator_api_max_concurrency must be an integer ≥ 1");
    expect(thrown(() => make({ maxRetries: -1 })).message).toContain("comparator_api_max_retries must be an integer ≥ 0");
    expect(thrown(() => make({ timeoutSeconds: 0 })).message).toContain("comparator_api_timeout must be a positive number");
    expect(thrown(() => make({ maxNPerRequest: 0 })).message).toContain("comparator_api_max_n_per_request must be an integer ≥ 1");
  });

  it("description, JSON and inspect output carry no key", () => {
    const c = make({ format: "anthropic", model: "claude-sonnet-4-20250514", url: `https://api.anthropic.com/v1/messages?api_key=${KEY}` });
    expect(c.description).toBe("api (anthropic, claude-sonnet-4-20250514, https://api.anthropic.com/v1/messages?api_key=REDACTED)");
    expect(JSON.stringify(c)).toBe(
      '{"description":"api (anthropic, claude-sonnet-4-20250514, https://api.anthropic.com/v1/messages?api_key=REDACTED)","format":"anthropic","url":"https://api.anthropic.com/v1/messages?api_key=REDACTED","model":"claude-sonnet-4-20250514","generationMode":"decentralized","allowPartial":false}',
    );
    expect(inspect(c, { showHidden: true, depth: 10 })).not.toContain(KEY);
    expect(Object.values(c).map(String).join(" ")).not.toContain(KEY);
  });

  it("sample() checks its arguments", async () => {
    const c = make({});
    await expect(c.sample([{}], [], 1)).rejects.toThrow(/0 prompt lists for 1 items/);
    await expect(c.sample([{}], [["p"]], -1)).rejects.toThrow(/non-negative integer/);
    expect(await c.sample([{}], [["p", "q"]], 0)).toEqual([{ texts: [[], []], stopped: [[], []], valid: [] }]);
    const cc = make({ generationMode: "centralized", centralizedAgentIndex: 2 });
    await expect(cc.sample([{}], [["p", "q"]], 1)).rejects.toThrow(/comparator_centralized_agent_index: agent index 2 is out of range; there are 2 agents/);
  });
});

describe("helpers", () => {
  it("plans n per request: native one each, openai capped by the setting and the provider", () => {
    expect(planCounts("anthropic", 3, null, null)).toEqual([1, 1, 1]);
    expect(planCounts("openai_responses", 2, 5, null)).toEqual([1, 1]);
    expect(planCounts("openai", 5, null, null)).toEqual([5]);
    expect(planCounts("openai", 5, 2, null)).toEqual([2, 2, 1]);
    expect(planCounts("openai", 3, 8, 1)).toEqual([1, 1, 1]);
    expect(planCounts("openai", 300, null, 128)).toEqual([128, 128, 44]);
    expect(planCounts("generic", 5, 3, 1)).toEqual([3, 2]);
    expect(planCounts("generic", 0, null, null)).toEqual([]);
    expect(providerNLimit("https://api.deepseek.com/chat/completions", "deepseek-chat")).toBe(1);
    expect(providerNLimit("https://api.deepseek.com/v1/chat/completions", null)).toBe(1);
    expect(providerNLimit("http://localhost:8000/v1/chat/completions", "deepseek-reasoner")).toBe(1);
    expect(providerNLimit("https://api.openai.com/v1/chat/completions", "gpt-4o")).toBe(128);
    expect(providerNLimit("http://localhost:8000/v1/chat/completions", "Qwen/Qwen2.5-7B")).toBeNull();
  });

  it("backoff: base·2^r with equal jitter from the seeded stream, capped, at least Retry-After", () => {
    const a = RngStream.fromSeed(3, "j");
    const b = RngStream.fromSeed(3, "j");
    const p = { baseMs: 1000, maxMs: 8000 };
    const da = [0, 1, 2, 3, 4, 5].map((r) => backoffMs(r, p, () => a.random()));
    const db = [0, 1, 2, 3, 4, 5].map((r) => backoffMs(r, p, () => b.random()));
    expect(da).toEqual(db);
    [1000, 2000, 4000, 8000, 8000, 8000].forEach((step, r) => {
      expect(da[r]).toBeGreaterThanOrEqual(step / 2);
      expect(da[r]).toBeLessThanOrEqual(step);
    });
    expect(backoffMs(0, p, () => 0.5, 7000)).toBe(7000);
  });

  it("parses Retry-After as seconds, an HTTP date, or retry-after-ms", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after": "2" }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ "retry-after": "0.5" }), now)).toBe(500);
    expect(parseRetryAfter(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:30 GMT" }), now)).toBe(30000);
    expect(parseRetryAfter(new Headers({ "retry-after": "Tue, 31 Dec 2024 00:00:00 GMT" }), now)).toBe(0);
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "150", "retry-after": "9" }), now)).toBe(150);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers({}), now)).toBeUndefined();
  });

  it("display URLs drop userinfo and key-like query values", () => {
    expect(displayUrl("https://u:p@h.example/v1?key=a&api_key=b&access_token=c&x-api-key=d&model=e&monkey=f")).toBe(
      "https://h.example/v1?key=REDACTED&api_key=REDACTED&access_token=REDACTED&x-api-key=REDACTED&model=e&monkey=f",
    );
  });
});

describe("factory", () => {
  const settings: ApiComparatorSettings = {
    format: "anthropic",
    url: "https://api.anthropic.com/v1/messages",
    model: "claude-sonnet-4-20250514",
    keyEnv: "ANTHROPIC_API_KEY",
    headers: { "anthropic-beta": "x" },
    timeoutSeconds: 30,
    maxConcurrency: 2,
    maxRetries: 3,
  };

  it('createComparator builds the API comparator for policy "api"', () => {
    const base = { agents: [], generation: GEN, rng: RngStream.fromSeed(1, "comparator") };
    const c = createComparator({ ...base, policy: "api", api: { ...settings, env: { ANTHROPIC_API_KEY: KEY } } });
    expect(c).toBeInstanceOf(ApiComparator);
    expect(c.description).toBe("api (anthropic, claude-sonnet-4-20250514, https://api.anthropic.com/v1/messages)");
    const cc = createComparator({
      ...base,
      policy: "api",
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      api: { ...settings, env: { ANTHROPIC_API_KEY: KEY } },
    });
    expect((cc as ApiComparator).generationMode).toBe("centralized");
    expect(() => createComparator({ ...base, policy: "api" })).toThrow(
      /comparator_policy="api" is not available in @pbrl\/comparators without ComparatorOptions.api/,
    );
  });
});

import { inspect } from "node:util";
import { RngStream } from "@pbrl/core-tensor";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ApiComparator, ApiComparatorError, type ApiComparatorOptions, type ApiRetryEvent } from "../../src/index.js";
import { reply, sendJson, startServer, type TestServer } from "./server.js";

const KEY = "sk-test-SECRET-7f3a";
const GEN = { maxNewTokens: 32, temperature: 0.7, topP: 0.9, topK: null, maxBatchRows: 8 };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Every error, comparator and retry event these tests produce; the last test greps them all for the key. */
const errors: unknown[] = [];
const comparators: ApiComparator[] = [];
const events: ApiRetryEvent[] = [];
const sleeps: number[] = [];
const logs: string[] = [];

function make(o: Partial<ApiComparatorOptions> & Pick<ApiComparatorOptions, "format" | "url">): ApiComparator {
  const c = new ApiComparator({
    generation: GEN,
    model: "m-1",
    env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY },
    // Long enough that a loaded CI machine never times out a healthy reply; the hang test sets its own.
    timeoutSeconds: 10,
    maxRetries: 2,
    rng: RngStream.fromSeed(1, "api-jitter"),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    onRetry: (e) => events.push(e),
    log: (line) => logs.push(line),
    ...o,
  });
  comparators.push(c);
  return c;
}

/** Runs a sample() that must fail; returns the error (collected for the key grep). */
async function failure(p: Promise<unknown>): Promise<ApiComparatorError> {
  const err = await p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
  errors.push(err);
  expect(err).toBeInstanceOf(ApiComparatorError);
  return err as ApiComparatorError;
}

const chatUrl = (s: TestServer): string => `${s.origin}/v1/chat/completions`;

describe("retries", () => {
  it("429 with Retry-After (seconds): waits at least that long, then succeeds", async () => {
    sleeps.length = 0;
    server = await startServer((req, res) =>
      req.index === 0 ? sendJson(res, 429, { error: "rate limited" }, { "retry-after": "3" }) : sendJson(res, 200, reply.openai(req)),
    );
    const c = make({ format: "openai", url: chatUrl(server) });
    const [set] = await c.sample([{}], [["p"]], 2);
    expect(set!.texts).toEqual([["r1c0", "r1c1"]]);
    expect(server.requests).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(3000);
    expect(c.stats).toEqual({ requests: 2, retries: 1, completions: 2, truncated: 0, scrubbed: 0 });
  });

  it("429 with Retry-After as an HTTP date and with retry-after-ms", async () => {
    sleeps.length = 0;
    const date = new Date(Date.now() + 5000).toUTCString();
    server = await startServer((req, res) => {
      if (req.index === 0) return sendJson(res, 429, {}, { "retry-after": date });
      if (req.index === 1) return sendJson(res, 429, {}, { "retry-after-ms": "2500" });
      return sendJson(res, 200, reply.anthropic(req));
    });
    const c = make({ format: "anthropic", url: `${server.origin}/v1/messages`, backoffBaseSeconds: 0.001 });
    await c.sample([{}], [["p"]], 1);
    expect(sleeps[0]).toBeGreaterThan(3000);
    expect(sleeps[0]).toBeLessThanOrEqual(5000);
    expect(sleeps[1]).toBe(2500);
  });

  it("a Retry-After beyond the limit fails at once", async () => {
    server = await startServer((_req, res) => sendJson(res, 429, { error: "daily quota" }, { "retry-after": "86400" }));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(1);
    expect(err.message).toMatch(
      /HTTP 429 \(Retry-After of 86400 s exceeds the 600 s the comparator waits at most\) after 1 attempt: \{"error":"daily quota"\}/,
    );
  });

  it("500 then success recovers; backoff grows exponentially with seeded jitter", async () => {
    sleeps.length = 0;
    server = await startServer((req, res) => (req.index < 2 ? sendJson(res, 500, "internal error") : sendJson(res, 200, reply.openai(req))));
    const c = make({ format: "openai", url: chatUrl(server), backoffBaseSeconds: 0.1 });
    const [set] = await c.sample([{}], [["p"]], 1);
    expect(set!.texts).toEqual([["r2c0"]]);
    expect(sleeps[0]).toBeGreaterThanOrEqual(50);
    expect(sleeps[0]).toBeLessThanOrEqual(100);
    expect(sleeps[1]).toBeGreaterThanOrEqual(100);
    expect(sleeps[1]).toBeLessThanOrEqual(200);
    expect(events.slice(-2).map((e) => [e.attempt, e.reason])).toEqual([
      [1, "HTTP 500"],
      [2, "HTTP 500"],
    ]);
  });

  it("408 (the server timed the request out) is retried like 429 and 5xx: 408 then success recovers", async () => {
    server = await startServer((req, res) => (req.index < 1 ? sendJson(res, 408, "request timeout") : sendJson(res, 200, reply.openai(req))));
    const [set] = await make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1);
    expect(set!.texts).toEqual([["r1c0"]]);
    expect(server.requests).toHaveLength(2);
    expect(events.at(-1)!.reason).toBe("HTTP 408");
  });

  it("5xx every time: the clear final error after maxRetries + 1 attempts", async () => {
    server = await startServer((_req, res) => sendJson(res, 503, { error: { message: "overloaded ".repeat(60) } }));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(3);
    expect(
      err.message.startsWith(
        `comparator API (openai) POST ${server.origin}/v1/chat/completions: HTTP 503 after 3 attempts: {"error":{"message":"overloaded overloaded`,
      ),
    ).toBe(true);
    expect(err.message.length).toBeLessThan(500);
    expect(err.status).toBe(503);
    expect(err.attempts).toBe(3);
  });

  it("a hang past the timeout is retried; a server that always hangs fails with a timeout", async () => {
    server = await startServer((req, res) => {
      if (req.index === 0) return; // never answers
      sendJson(res, 200, reply.responses(req));
    });
    const c = make({ format: "openai_responses", url: `${server.origin}/v1/responses`, timeoutSeconds: 1 });
    const t0 = Date.now();
    const [set] = await c.sample([{}], [["p"]], 1);
    expect(set!.texts).toEqual([["r1"]]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    await server.close();

    server = await startServer(() => undefined);
    const err = await failure(
      make({ format: "openai_responses", url: `${server.origin}/v1/responses`, maxRetries: 1, timeoutSeconds: 0.2 }).sample([{}], [["p"]], 1),
    );
    expect(server.requests).toHaveLength(2);
    expect(err.message).toBe(`comparator API (openai_responses) POST ${server.origin}/v1/responses: timed out after 0.2 s after 2 attempts`);
  });

  it("a reset connection is retried; resets every time fail with a connection error", async () => {
    server = await startServer((req, res, raw) => {
      if (req.index === 0) raw.socket.destroy();
      else sendJson(res, 200, reply.anthropic(req));
    });
    const c = make({ format: "anthropic", url: `${server.origin}/v1/messages` });
    expect((await c.sample([{}], [["p"]], 1))[0]!.texts).toEqual([["r1"]]);
    await server.close();

    server = await startServer((_req, _res, raw) => {
      raw.socket.destroy();
    });
    const err = await failure(make({ format: "anthropic", url: `${server.origin}/v1/messages` }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(3);
    expect(err.message).toMatch(new RegExp(`^comparator API \\(anthropic\\) POST ${server.origin}/v1/messages: connection error \\(.+\\) after 3 attempts$`));
  });

  it("a refused connection (nothing listening) is retried, then fails", async () => {
    server = await startServer(() => undefined);
    const url = `${server.origin}/v1/messages`;
    await server.close();
    server = undefined;
    const err = await failure(make({ format: "anthropic", url, maxRetries: 1 }).sample([{}], [["p"]], 1));
    expect(err.message).toMatch(/connection error \(ECONNREFUSED: .*\) after 2 attempts$/);
  });
});

describe("failures without retry", () => {
  it("invalid JSON in a 200 response fails at once with the start of the body", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<html><body>Login required for ${KEY}</body></html>`);
    });
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(1);
    expect(err.message).toBe(
      `comparator API (openai) POST ${server.origin}/v1/chat/completions: HTTP 200 with a body that is not JSON after 1 attempt: <html><body>Login required for [REDACTED]</body></html>`,
    );
  });

  it("401 is not retried; a key echoed by the server is scrubbed", async () => {
    server = await startServer((_req, res) => sendJson(res, 401, { error: { message: `Incorrect API key provided: ${KEY}` } }));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(1);
    expect(err.status).toBe(401);
    expect(err.message).toContain("HTTP 401 (check the API key in the environment variable named by comparator_api_key_env");
    expect(err.message).toContain("after 1 attempt: ");
    expect(err.message).toContain("Incorrect API key provided: [REDACTED]");
  });

  it.each([400, 403, 404, 422])("HTTP %i is not retried", async (status) => {
    server = await startServer((_req, res) => sendJson(res, status, { error: "bad" }));
    const err = await failure(make({ format: "anthropic", url: `${server.origin}/v1/messages` }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(1);
    expect(err.message).toContain(`HTTP ${status}`);
  });

  it.each([405, 409, 410])("HTTP %i is a client error, not retried (only 408 and 429 of the 4xx are)", async (status) => {
    server = await startServer((_req, res) => sendJson(res, status, { error: "no" }));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(server.requests).toHaveLength(1);
    expect(err.status).toBe(status);
    expect(err.attempts).toBe(1);
  });

  it("a redirect is reported, never followed (the key header stays with the configured host)", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(307, { location: "http://elsewhere.invalid/v1/messages" });
      res.end();
    });
    const err = await failure(make({ format: "anthropic", url: `${server.origin}/v1/messages` }).sample([{}], [["p"]], 1));
    expect(err.message).toContain("HTTP 307 redirect to http://elsewhere.invalid/v1/messages (not followed");
  });

  it("the first failure cancels the requests still queued; no request outlives sample()", async () => {
    server = await startServer((req, res) => (req.index === 0 ? sendJson(res, 401, { error: "no" }) : sendJson(res, 200, reply.anthropic(req))));
    const err = await failure(
      make({ format: "anthropic", url: `${server.origin}/v1/messages`, maxConcurrency: 1 }).sample(
        [{}, {}],
        [
          ["p", "q"],
          ["r", "s"],
        ],
        4,
      ),
    );
    expect(err.status).toBe(401);
    expect(server.requests).toHaveLength(1);
  });

  it("the URL in messages drops key-like query values, and a server echoing them is scrubbed", async () => {
    server = await startServer((req, res) => sendJson(res, 404, `not here: ${req.path}`));
    const err = await failure(make({ format: "generic", url: `${server.origin}/gen?key=${KEY}&api_key=${KEY}&v=2` }).sample([{}], [["p"]], 1));
    expect(server.requests[0]!.path).toBe(`/gen?key=${KEY}&api_key=${KEY}&v=2`);
    expect(err.message).toContain(`POST ${server.origin}/gen?key=REDACTED&api_key=REDACTED&v=2: HTTP 404`);
    expect(err.message).toContain("not here: /gen?key=[REDACTED]&api_key=[REDACTED]&v=2");
  });
});

describe("completion counts", () => {
  it("fewer completions than asked is an error naming the format, URL, agent and counts", async () => {
    server = await startServer((req, res) => sendJson(res, 200, { choices: [{ message: { content: `only ${req.index}` }, finish_reason: "stop" }] }));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p", "q"]], 3));
    expect(err.message).toMatch(
      new RegExp(
        `^comparator API \\(openai\\) POST ${server.origin}/v1/chat/completions: too few completions for agent [01] of item 0: asked for 3 \\(1 request\\), received 1; if the server ignores n, set comparator_api_max_n_per_request=1; set comparator_api_allow_partial=true to accept fewer: a short response began: \\{"choices"`,
      ),
    );
  });

  it("native formats: a response without a text block counts as no completion", async () => {
    server = await startServer((req, res) =>
      req.index === 1 ? sendJson(res, 200, { content: [], stop_reason: "refusal" }) : sendJson(res, 200, reply.anthropic(req)),
    );
    const err = await failure(make({ format: "anthropic", url: `${server.origin}/v1/messages`, maxConcurrency: 1 }).sample([{}], [["p"]], 3));
    expect(err.message).toContain("too few completions for agent 0 of item 0: asked for 3 (3 requests), received 2");
  });

  it("generic: fewer than num_return_sequences is an error", async () => {
    server = await startServer((_req, res) => sendJson(res, 200, { completions: ["one"] }));
    const err = await failure(make({ format: "generic", url: `${server.origin}/g` }).sample([{}], [["p"]], 2));
    expect(err.message).toContain("asked for 2 (1 request), received 1");
  });

  it("allowPartial: decentralized keeps the smallest count of the item for every agent", async () => {
    server = await startServer((req, res) => {
      const prompt = (req.body as { messages: { content: string }[] }).messages[0]!.content;
      const n = prompt === "q0" ? 2 : prompt === "p1" ? 0 : 3;
      sendJson(res, 200, {
        choices: Array.from({ length: n }, (_, i) => ({ message: { content: `${prompt}-${i}` }, finish_reason: i === 0 ? "stop" : "length" })),
      });
    });
    const c = make({ format: "openai", url: chatUrl(server), allowPartial: true });
    const sets = await c.sample(
      [{}, {}],
      [
        ["p0", "q0"],
        ["p1", "q1"],
      ],
      3,
    );
    expect(sets[0]).toEqual({
      texts: [
        ["p0-0", "p0-1"],
        ["q0-0", "q0-1"],
      ],
      stopped: [
        [true, false],
        [true, false],
      ],
      valid: [true, true],
    });
    expect(sets[1]).toEqual({ texts: [[], []], stopped: [[], []], valid: [] });
  });

  it("allowPartial: centralized keeps the joint completions that came back", async () => {
    server = await startServer((req, res) =>
      req.index === 0
        ? sendJson(res, 200, { output: [], status: "failed" })
        : sendJson(res, 200, reply.responses(req, "<agent_0>a</agent_0><agent_1>b</agent_1>")),
    );
    const c = make({ format: "openai_responses", url: `${server.origin}/v1/responses`, allowPartial: true, generationMode: "centralized", maxConcurrency: 1 });
    const [set] = await c.sample([{}], [["p", "q"]], 3);
    expect(set).toEqual({
      texts: [
        ["a", "a"],
        ["b", "b"],
      ],
      stopped: [
        [true, true],
        [true, true],
      ],
      valid: [true, true],
    });
  });
});

describe("the key never leaks", () => {
  it("no error message, stack, error object, event, description or serialised comparator of these tests contains the key", () => {
    expect(errors.length).toBeGreaterThanOrEqual(15);
    expect(comparators.length).toBeGreaterThanOrEqual(15);
    const texts: string[] = [];
    for (const e of errors) {
      const err = e as Error;
      texts.push(err.message, err.stack ?? "", JSON.stringify(err), inspect(err, { depth: 10, showHidden: true }), String(err));
    }
    for (const c of comparators) texts.push(c.description, JSON.stringify(c), inspect(c, { depth: 10, showHidden: true }), JSON.stringify(c.stats));
    texts.push(JSON.stringify(events), ...logs);
    const leaks = texts.filter((t) => t.includes(KEY) || t.includes("SECRET-7f3a"));
    expect(leaks).toEqual([]);
  });
});

afterAll(() => {
  errors.length = 0;
});

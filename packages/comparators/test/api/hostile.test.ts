// Issue 17, case 6: a hostile or broken API server cannot make the comparator buffer without
// bound, train on oversized or non-string completions, drop completions silently, or write a
// credential into a round file. Every test talks to a real HTTP server on 127.0.0.1.
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { RngStream } from "@pbrl/core-tensor";
import type { Policy } from "@pbrl/preference-data";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ApiComparator,
  ApiComparatorError,
  ApiMalformedResponseError,
  ApiResponseTooLargeError,
  ApiTooManyCompletionsError,
  createComparator,
  redactHeaderSecrets,
  redactUrlSecrets,
  type ApiComparatorOptions,
} from "../../src/index.js";
import { FIXTURES, LLAMA, loadAgent, QWEN } from "../agents.js";
import { reply, sendJson, startServer, type TestServer } from "./server.js";

const KEY = "sk-test-SECRET-7f3a";
const GEN = { maxNewTokens: 8, temperature: 0.7, topP: 0.9, topK: null, maxBatchRows: 8 };
const MiB = 1024 * 1024;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const logs: string[] = [];

function make(o: Partial<ApiComparatorOptions> & Pick<ApiComparatorOptions, "format" | "url">): ApiComparator {
  return new ApiComparator({
    generation: GEN,
    model: "m",
    env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY, MY_KEY: KEY },
    maxRetries: 2,
    timeoutSeconds: 10,
    log: (line) => logs.push(line),
    ...o,
  });
}

/** The error a call must fail with. */
async function failure(p: Promise<unknown>): Promise<ApiComparatorError> {
  const err = await p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiComparatorError);
  return err as ApiComparatorError;
}

const chatUrl = (s: TestServer): string => `${s.origin}/v1/chat/completions`;

describe("1. bounded responses (comparator_api_max_response_bytes)", () => {
  it("a 10 MB completion fails at the default 8 MiB limit, naming the URL, the limit and the field; not retried", async () => {
    const huge = JSON.stringify({ choices: [{ message: { content: "x".repeat(10_000_000) }, finish_reason: "stop" }] });
    server = await startServer((_req, res) => sendJson(res, 200, huge));
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 1));
    expect(err).toBeInstanceOf(ApiResponseTooLargeError);
    const e = err as ApiResponseTooLargeError;
    expect(e.limitBytes).toBe(8 * MiB);
    expect(e.declared).toBe(true);
    expect(e.receivedBytes).toBe(Buffer.byteLength(huge));
    expect(e.message).toContain(
      `POST ${server.origin}/v1/chat/completions: response body larger than comparator_api_max_response_bytes=8388608 (its Content-Length is ${Buffer.byteLength(huge)} bytes); not retried`,
    );
    expect(e.message).toContain("raise comparator_api_max_response_bytes");
    expect(server.requests).toHaveLength(1);
  });

  it("a chunked body without Content-Length is cut off as soon as it passes the limit", async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"completions": ["');
      for (let i = 0; i < 32; i++) res.write("y".repeat(64 * 1024));
      res.end('"]}');
    });
    const err = await failure(make({ format: "generic", url: `${server.origin}/g`, maxResponseBytes: MiB }).sample([{}], [["p"]], 1));
    expect(err).toBeInstanceOf(ApiResponseTooLargeError);
    expect((err as ApiResponseTooLargeError).declared).toBe(false);
    expect((err as ApiResponseTooLargeError).receivedBytes).toBeGreaterThan(MiB);
    expect(err.message).toMatch(/comparator_api_max_response_bytes=1048576 \(reading stopped after \d+ bytes\); not retried/);
    expect(server.requests).toHaveLength(1);
  });

  it("an endless body: the error arrives, memory stays bounded, and the connection is closed", async () => {
    let closed!: () => void;
    const serverSawClose = new Promise<void>((resolve) => (closed = resolve));
    const chunk = Buffer.alloc(64 * 1024, 0x7a);
    let written = 0;
    server = await startServer((req, res) => {
      if (req.path === "/warm-up") return sendJson(res, 200, {});
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"completions": ["');
      let open = true;
      res.on("close", () => {
        open = false;
        closed();
      });
      const pump = (): void => {
        while (open) {
          written += chunk.length;
          if (!res.write(chunk)) break;
        }
        if (open) res.once("drain", pump);
      };
      pump();
    });
    // fetch loads undici on first use: that is not the body's memory.
    await (await fetch(`${server.origin}/warm-up`, { method: "POST" })).text();
    const before = process.memoryUsage().rss;
    const t0 = Date.now();
    const err = await failure(make({ format: "generic", url: `${server.origin}/stream`, maxRetries: 0 }).sample([{}], [["p"]], 1));
    const growth = process.memoryUsage().rss - before;
    expect(err).toBeInstanceOf(ApiResponseTooLargeError);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(growth).toBeLessThan(100 * MiB);
    await serverSawClose;
    expect(written).toBeGreaterThan(8 * MiB);
    const stoppedAt = written;
    await new Promise((r) => setTimeout(r, 100));
    expect(written).toBe(stoppedAt);
  });

  it("the limit is validated (comparator_api_max_response_bytes)", () => {
    expect(() => make({ format: "generic", url: "http://127.0.0.1:9/g", maxResponseBytes: 1000 })).toThrow(
      /comparator_api_max_response_bytes must be an integer from 1024 to 268435456 \(256 MiB\), got 1000/,
    );
  });
});

describe("2. completions held to max_new_tokens of the agent's tokenizer", () => {
  let agents: Policy[];
  let corpus: string;
  beforeAll(async () => {
    agents = [await loadAgent(LLAMA), await loadAgent(QWEN)];
    corpus = await readFile(path.join(FIXTURES, "corpus.txt"), "utf8");
  });
  afterAll(() => agents.forEach((a) => a.model.dispose()));

  const tokens = (a: Policy, text: string): number => a.tokenizer.encode(text, { addSpecialTokens: false }).length;

  it("decentralized (built by createComparator from the agents): each agent's completions cut with its own tokenizer; one log line per round", async () => {
    const long = corpus.slice(0, 4000);
    server = await startServer((req, res) => {
      const n = (req.body as { n: number }).n;
      sendJson(res, 200, {
        choices: Array.from({ length: n }, (_, i) => ({ message: { content: i === 0 ? "Short." : long.slice(i * 10) }, finish_reason: "stop" })),
      });
    });
    const log: string[] = [];
    const c = createComparator({
      policy: "api",
      agents,
      generation: GEN,
      rng: RngStream.fromSeed(1, "comparator"),
      api: { format: "openai", url: chatUrl(server), model: "m", env: { OPENAI_API_KEY: KEY }, log: (l) => log.push(l) },
    }) as ApiComparator;
    await c.beginRound(1);
    const first = await c.sample(
      [{}, {}],
      [
        ["p0", "q0"],
        ["p1", "q1"],
      ],
      3,
    );
    const second = await c.sample([{}], [["p2", "q2"]], 3);
    await c.endRound();
    for (const set of [...first, ...second]) {
      set.texts.forEach((agentTexts, a) =>
        agentTexts.forEach((t, j) => {
          expect(tokens(agents[a]!, t)).toBeLessThanOrEqual(GEN.maxNewTokens);
          if (j === 0) expect(t).toBe("Short.");
          else expect(long.slice(j * 10).startsWith(t) && t.length > 0).toBe(true);
        }),
      );
      // A cut completion ended at the limit, not by itself: no EOS will be appended to it.
      expect(set.stopped).toEqual([
        [true, false, false],
        [true, false, false],
      ]);
    }
    expect(c.stats.truncated).toBe(12);
    expect(log).toEqual([
      `pbrl: comparator API (openai, ${chatUrl(server)}): 12 of 18 completions this round were longer than max_new_tokens=8 tokens and were cut to it (counted as not stopped)`,
    ]);

    await c.beginRound(2);
    server.handler = (req, res) => sendJson(res, 200, reply.openai(req));
    await c.sample([{}], [["p"]], 2);
    await c.endRound();
    expect(log).toHaveLength(1);
  });

  it("centralized: the joint completion is cut with the centralized agent's tokenizer (a cut one no longer splits into roles)", async () => {
    const joint = (a: string, b: string): string => `<agent_0>${a}</agent_0><agent_1>${b}</agent_1>`;
    server = await startServer((req, res) => sendJson(res, 200, reply.anthropic(req, req.index === 0 ? joint("a", "b") : joint(corpus.slice(0, 500), "b"))));
    const c = make({
      format: "anthropic",
      url: `${server.origin}/v1/messages`,
      generationMode: "centralized",
      centralizedAgentIndex: 1,
      maxConcurrency: 1,
      generation: { ...GEN, maxNewTokens: 64 },
      tokenizers: agents.map((a) => a.tokenizer),
    });
    const [set] = await c.sample([{}], [["p", "q"]], 2);
    expect(set!.valid).toEqual([true, false]);
    expect(set!.texts).toEqual([
      ["a", ""],
      ["b", ""],
    ]);
    expect(c.stats.truncated).toBe(1);
  });

  it("without tokenizers nothing can be cut: a warning says so, once", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.openai(req)));
    logs.length = 0;
    const c = make({ format: "openai", url: chatUrl(server) });
    await c.sample([{}], [["p"]], 1);
    await c.sample([{}], [["p"]], 1);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toContain("built without the agents' tokenizers, so remote completions are not cut to max_new_tokens=8");
  });
});

describe("3. non-string completions are a typed error", () => {
  it.each([
    { format: "generic" as const, body: { completions: ["fine", 42] }, path: "$.completions[1]", type: "number" },
    { format: "generic" as const, body: { completions: [null] }, path: "$.completions[0]", type: "null" },
    { format: "generic" as const, body: { completions: [{ text: { nested: "x" } }] }, path: "$.completions[0].text", type: "object" },
    {
      format: "openai" as const,
      body: { choices: [{ message: { content: ["a", "b"] }, finish_reason: "stop" }] },
      path: "$.choices[0].message.content",
      type: "array",
    },
    { format: "anthropic" as const, body: { content: [{ type: "text", text: 7 }], stop_reason: "end_turn" }, path: "$.content[0].text", type: "number" },
    {
      format: "openai_responses" as const,
      body: { status: "completed", output: [{ type: "message", content: [{ type: "output_text", text: false }] }] },
      path: "$.output[0].content[0].text",
      type: "boolean",
    },
  ])("$format: $type at $path", async ({ format, body, path: where, type }) => {
    server = await startServer((_req, res) => sendJson(res, 200, body));
    const err = await failure(make({ format, url: `${server.origin}/x`, maxRetries: 3 }).sample([{}], [["p"]], 1));
    expect(err).toBeInstanceOf(ApiMalformedResponseError);
    const e = err as ApiMalformedResponseError;
    expect(e.path).toBe(where);
    expect(e.receivedType).toBe(type);
    expect(e.message).toContain(`POST ${server.origin}/x: malformed completion at ${where}: `);
    expect(e.message).toMatch(/must return/);
    expect(server.requests).toHaveLength(1);
  });
});

describe("4. more completions than requested is an error, never silently dropped", () => {
  it("openai: n = 2, three choices back", async () => {
    server = await startServer((_req, res) =>
      sendJson(res, 200, { choices: ["a", "b", "c"].map((t) => ({ message: { content: t }, finish_reason: "stop" })) }),
    );
    const err = await failure(make({ format: "openai", url: chatUrl(server) }).sample([{}], [["p"]], 2));
    expect(err).toBeInstanceOf(ApiTooManyCompletionsError);
    expect((err as ApiTooManyCompletionsError).requested).toBe(2);
    expect((err as ApiTooManyCompletionsError).received).toBe(3);
    expect(err.message).toContain(
      "too many completions for agent 0 of item 0: requested 2, received 3; the server must return exactly the number asked for (n)",
    );
  });

  it("generic: num_return_sequences = 2, four back, also with allowPartial", async () => {
    server = await startServer((_req, res) => sendJson(res, 200, { completions: ["a", "b", "c", "d"] }));
    const err = await failure(make({ format: "generic", url: `${server.origin}/g`, allowPartial: true }).sample([{}], [["p", "q"]], 2));
    expect(err).toBeInstanceOf(ApiTooManyCompletionsError);
    expect(err.message).toMatch(/too many completions for agent [01] of item 0: requested 2, received 4; .*\(num_return_sequences\)/);
  });
});

describe("5. credentials echoed inside completions are scrubbed", () => {
  it("the key, credential headers and key-like URL parameters become [REDACTED]; one warning", async () => {
    const headerToken = "hdr-token-0123456789";
    const userBearer = "user-bearer-abcdefgh";
    const urlKey = "url-secret-99887766";
    server = await startServer((req, res) =>
      sendJson(res, 200, {
        completions: [
          `the key is ${KEY}!`,
          `x-auth: ${headerToken}`,
          `Authorization: Bearer ${userBearer}`,
          `query ${encodeURIComponent(urlKey)} ${urlKey}`,
          `clean ${req.index}`,
        ],
      }),
    );
    logs.length = 0;
    const c = make({
      format: "generic",
      url: `${server.origin}/g?api_key=${urlKey}`,
      keyEnv: "MY_KEY",
      keyHeader: "X-Key",
      headers: { "X-Auth-Token": headerToken, Authorization: `Bearer ${userBearer}` },
    });
    const [set] = await c.sample([{}], [["p"]], 5);
    expect(set!.texts[0]).toEqual(["the key is [REDACTED]!", "x-auth: [REDACTED]", "Authorization: [REDACTED]", "query [REDACTED] [REDACTED]", "clean 0"]);
    await c.sample([{}], [["p"]], 5);
    expect(c.stats.scrubbed).toBe(8);
    const warnings = logs.filter((l) => l.includes("echoed a credential"));
    expect(warnings).toHaveLength(1);
    for (const secret of [KEY, headerToken, userBearer, urlKey]) expect(logs.join("\n")).not.toContain(secret);

    // A key too short to be a secret (vLLM's placeholder EMPTY) is not cut out of ordinary text.
    server.handler = (_req, res) => sendJson(res, 200, { completions: ["the list is EMPTY"] });
    const d = make({ format: "generic", url: `${server.origin}/g`, keyEnv: "SHORT", env: { SHORT: "EMPTY" } });
    expect((await d.sample([{}], [["p"]], 1))[0]!.texts).toEqual([["the list is EMPTY"]]);
  });
});

describe("6. redacting the URL and headers before they are saved (config.json)", () => {
  it("redactUrlSecrets / redactHeaderSecrets, as the comparator shows its URL", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.generic(req)));
    const url = `${server.origin}/g?key=k1&api_key=k2&token=t3&sig=s4&X-Amz-Signature=s5&access_token=t6&model=m&v=2`;
    const safe = redactUrlSecrets(url);
    expect(safe).toBe(
      `${server.origin}/g?key=REDACTED&api_key=REDACTED&token=REDACTED&sig=REDACTED&X-Amz-Signature=REDACTED&access_token=REDACTED&model=m&v=2`,
    );
    const c = make({ format: "generic", url });
    await c.sample([{}], [["p"]], 1);
    expect(server.requests[0]!.path).toBe("/g?key=k1&api_key=k2&token=t3&sig=s4&X-Amz-Signature=s5&access_token=t6&model=m&v=2");
    expect(c.displayUrl).toBe(safe);
    expect(redactUrlSecrets("https://user:pw@api.example.com/v1?token=abc")).toBe("https://api.example.com/v1?token=REDACTED");
    expect(redactUrlSecrets("not a url?token=abc&x=1")).toBe("not a url?token=REDACTED&x=1");
    expect(
      redactHeaderSecrets({ Authorization: "Bearer abc", "x-api-key": "k", "X-Trace": "t1", "X-Forward": "Basic dXNlcjpwdw==", "anthropic-beta": "b1" }),
    ).toEqual({
      Authorization: "[REDACTED]",
      "x-api-key": "[REDACTED]",
      "X-Trace": "t1",
      "X-Forward": "[REDACTED]",
      "anthropic-beta": "b1",
    });
  });
});

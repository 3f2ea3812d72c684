import { afterEach, describe, expect, it } from "vitest";
import { ApiComparator, TaggedCentralizedAdapter, type ApiComparatorOptions } from "../../src/index.js";
import { jsonSafe, parseResponse } from "../../src/api/formats.js";
import { reply, sendJson, startServer, type Recorded, type TestServer } from "./server.js";

const KEY = "sk-test-SECRET-7f3a";
const GEN = { maxNewTokens: 64, temperature: 0.7, topP: 0.9, topK: 40, maxBatchRows: 8 };
const ITEMS = [
  { id: 0, question: "2+2?" },
  { id: 1, question: "3+3?" },
];
const PROMPTS = [
  ["a0 item0", "a1 item0"],
  ["a0 item1", "a1 item1"],
];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function make(o: Partial<ApiComparatorOptions> & Pick<ApiComparatorOptions, "format" | "url">): ApiComparator {
  return new ApiComparator({ generation: GEN, env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY, MY_KEY: KEY }, maxRetries: 0, log: () => undefined, ...o });
}

/** The recorded request whose body carries this prompt (requests run concurrently, in any order). */
function byPrompt(reqs: Recorded[], field: string, prompt: string): Recorded[] {
  return reqs.filter((r) => {
    const b = r.body as Record<string, unknown>;
    const v = field === "messages" ? (b["messages"] as { content: string }[])[0]!.content : b[field];
    return v === prompt;
  });
}

const tagged = (a0: string, a1: string): string => `<agent_0>\n${a0}\n</agent_0>\n<agent_1>\n${a1}\n</agent_1>`;

describe("generic format", () => {
  it("decentralized: one request per agent and item with CoMLRL's keys, no null fields, no auth without a key env", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, {
        completions: [
          `${(req.body as { prompt: string }).prompt} #0`,
          `${(req.body as { prompt: string }).prompt} #1`,
          `${(req.body as { prompt: string }).prompt} #2`,
        ],
      }),
    );
    const c = make({ format: "generic", url: `${server.origin}/generate`, generation: { ...GEN, topK: null } });
    const sets = await c.sample(ITEMS, PROMPTS, 3);
    expect(server.requests).toHaveLength(4);
    for (const r of server.requests) {
      expect(r.method).toBe("POST");
      expect(r.path).toBe("/generate");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(r.headers["authorization"]).toBeUndefined();
      expect(r.headers["x-api-key"]).toBeUndefined();
    }
    const [r] = byPrompt(server.requests, "prompt", "a1 item1");
    expect(r!.body).toEqual({
      prompt: "a1 item1",
      agent_idx: 1,
      num_return_sequences: 3,
      max_new_tokens: 64,
      temperature: 0.7,
      top_p: 0.9,
      batch_item: { id: 1, question: "3+3?" },
    });
    expect(sets).toEqual([
      {
        texts: [
          ["a0 item0 #0", "a0 item0 #1", "a0 item0 #2"],
          ["a1 item0 #0", "a1 item0 #1", "a1 item0 #2"],
        ],
        stopped: [
          [false, false, false],
          [false, false, false],
        ],
        valid: [true, true, true],
      },
      {
        texts: [
          ["a0 item1 #0", "a0 item1 #1", "a0 item1 #2"],
          ["a1 item1 #0", "a1 item1 #1", "a1 item1 #2"],
        ],
        stopped: [
          [false, false, false],
          [false, false, false],
        ],
        valid: [true, true, true],
      },
    ]);
  });

  it("model, key env with a custom header and prefix, extra body over the fields, a dotted response field with object items", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, {
        data: {
          outputs: [
            { text: `${req.index}a`, finish_reason: "stop" },
            { content: `${req.index}b`, finish_reason: "length" },
            { completion: `${req.index}c`, stopped: true },
            { message: { content: `${req.index}d` } },
            "7",
          ],
        },
      }),
    );
    const c = make({
      format: "generic",
      url: `${server.origin}/v1/gen?mode=x`,
      model: "my-model",
      keyEnv: "MY_KEY",
      keyHeader: "X-Token",
      keyPrefix: "Token",
      headers: { "X-Trace": "t1" },
      extraBody: { temperature: 0.1, stop: ["\n"] },
      responseField: "data.outputs",
    });
    const [set] = await c.sample([ITEMS[0]!], [["only agent"]], 5);
    const r = server.requests[0]!;
    expect(r.path).toBe("/v1/gen?mode=x");
    expect(r.headers["x-token"]).toBe(`Token ${KEY}`);
    expect(r.headers["authorization"]).toBeUndefined();
    expect(r.headers["x-trace"]).toBe("t1");
    expect(r.body).toEqual({
      prompt: "only agent",
      agent_idx: 0,
      num_return_sequences: 5,
      max_new_tokens: 64,
      temperature: 0.1,
      top_p: 0.9,
      top_k: 40,
      batch_item: { id: 0, question: "2+2?" },
      model: "my-model",
      stop: ["\n"],
    });
    expect(set).toEqual({ texts: [["0a", "0b", "0c", "0d", "7"]], stopped: [[true, false, true, false, false]], valid: [true, true, true, true, true] });
  });

  it("falls back to completions / responses / outputs / choices, indexes arrays in the path, and an empty prefix sends the bare key", async () => {
    const bodies: unknown[] = [
      { outputs: ["o1", "o2"] },
      { choices: [{ message: { content: "c1" }, finish_reason: "stop" }, { text: "c2" }] },
      { result: [{ seqs: ["p1", "p2"] }] },
    ];
    server = await startServer((req, res) => sendJson(res, 200, bodies[req.index]));
    const c = make({ format: "generic", url: `${server.origin}/g`, keyEnv: "MY_KEY", keyPrefix: "" });
    expect((await c.sample([{}], [["p"]], 2))[0]!.texts).toEqual([["o1", "o2"]]);
    expect((await c.sample([{}], [["p"]], 2))[0]).toEqual({ texts: [["c1", "c2"]], stopped: [[true, false]], valid: [true, true] });
    expect(server.requests[0]!.headers["authorization"]).toBe(KEY);
    const d = make({ format: "generic", url: `${server.origin}/g`, responseField: "result.0.seqs" });
    expect((await d.sample([{}], [["p"]], 2))[0]!.texts).toEqual([["p1", "p2"]]);
  });

  it("centralized: one joint prompt per item with agent_idx = the centralized index; unparseable completions are invalid candidates", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, {
        completions: [
          { text: tagged(`x${req.index}`, `y${req.index}`), finish_reason: "stop" },
          "no tags at all",
          { text: tagged("u", "v"), finish_reason: "length" },
        ],
      }),
    );
    const adapter = new TaggedCentralizedAdapter();
    const c = make({ format: "generic", url: `${server.origin}/g`, generationMode: "centralized", centralizedAgentIndex: 1 });
    expect(c.description).toContain("centralized");
    const sets = await c.sample(ITEMS, PROMPTS, 3);
    expect(server.requests).toHaveLength(2);
    const [r] = byPrompt(server.requests, "prompt", adapter.buildPrompt(ITEMS[1]!, PROMPTS[1]!));
    expect(r!.body).toEqual({
      prompt: adapter.buildPrompt(ITEMS[1]!, PROMPTS[1]!),
      agent_idx: 1,
      num_return_sequences: 3,
      max_new_tokens: 64,
      temperature: 0.7,
      top_p: 0.9,
      top_k: 40,
      batch_item: ITEMS[1],
    });
    const i = r!.index;
    expect(sets[1]).toEqual({
      texts: [
        [`x${i}`, "", "u"],
        [`y${i}`, "", "v"],
      ],
      stopped: [
        [true, false, false],
        [true, false, false],
      ],
      valid: [true, false, true],
    });
  });

  it("makes task items JSON-safe", () => {
    const item = {
      big: 12n,
      huge: 2n ** 70n,
      nan: Number.NaN,
      when: new Date(0),
      map: new Map([["k", 1]]),
      set: new Set([1, 2]),
      arr: new Float32Array([0.5]),
      fn: () => 1,
      undef: undefined,
      nested: { list: [undefined, 1] },
    };
    expect(jsonSafe(item)).toEqual({
      big: 12,
      huge: "1180591620717411303424",
      nan: "NaN",
      when: "1970-01-01T00:00:00.000Z",
      map: { k: 1 },
      set: [1, 2],
      arr: [0.5],
      nested: { list: [null, 1] },
    });
    const cyc: Record<string, unknown> = { a: 1 };
    cyc["self"] = cyc;
    expect(jsonSafe(cyc)).toEqual({ a: 1, self: "[Circular]" });
  });
});

describe("openai format (Chat Completions)", () => {
  it("decentralized: Bearer key, exact body, n, choices parsed with finish_reason", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, reply.openai(req, (req.body as { messages: { content: string }[] }).messages[0]!.content.startsWith("a1") ? "length" : "stop")),
    );
    const c = make({ format: "openai", url: `${server.origin}/v1/chat/completions`, model: "gpt-4o-mini" });
    const sets = await c.sample(ITEMS, PROMPTS, 3);
    expect(server.requests).toHaveLength(4);
    const r = byPrompt(server.requests, "messages", "a0 item1")[0]!;
    expect(r.method).toBe("POST");
    expect(r.path).toBe("/v1/chat/completions");
    expect(r.headers["authorization"]).toBe(`Bearer ${KEY}`);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["anthropic-version"]).toBeUndefined();
    expect(r.body).toEqual({ model: "gpt-4o-mini", messages: [{ role: "user", content: "a0 item1" }], n: 3, max_tokens: 64, temperature: 0.7, top_p: 0.9 });
    expect(sets[1]!.texts[0]).toEqual([0, 1, 2].map((i) => `r${r.index}c${i}`));
    expect(sets[1]!.stopped).toEqual([
      [true, true, true],
      [false, false, false],
    ]);
    expect(sets[1]!.valid).toEqual([true, true, true]);
  });

  it("caps n at comparator_api_max_n_per_request and issues several requests, in order", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.openai(req)));
    const c = make({ format: "openai", url: `${server.origin}/v1/chat/completions`, model: "gpt-4o-mini", maxNPerRequest: 3, maxConcurrency: 1 });
    const [set] = await c.sample([{}], [["p"]], 7);
    expect(server.requests.map((r) => (r.body as { n: number }).n)).toEqual([3, 3, 1]);
    expect(set!.texts[0]).toEqual(["r0c0", "r0c1", "r0c2", "r1c0", "r1c1", "r1c2", "r2c0"]);
  });

  it("DeepSeek accepts only n = 1: one request per candidate", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.openai(req)));
    const c = make({ format: "openai", url: `${server.origin}/chat/completions`, model: "deepseek-chat", keyEnv: "MY_KEY" });
    const [set] = await c.sample([{}], [["p", "q"]], 4);
    expect(server.requests).toHaveLength(8);
    expect(server.requests.every((r) => (r.body as { n: number }).n === 1)).toBe(true);
    expect(set!.texts.map((t) => t.length)).toEqual([4, 4]);
  });

  it("centralized: the joint prompt as the user message; roles split", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, {
        choices: [
          { message: { content: tagged("A", "B") }, finish_reason: "stop" },
          { message: { content: "garbage" }, finish_reason: "stop" },
        ],
      }),
    );
    const adapter = new TaggedCentralizedAdapter();
    const c = make({ format: "chat", url: `${server.origin}/v1/chat/completions`, model: "gpt-4o-mini", generationMode: "centralized" });
    const [set] = await c.sample([ITEMS[0]!], [PROMPTS[0]!], 2);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]!.body).toEqual({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: adapter.buildPrompt(ITEMS[0]!, PROMPTS[0]!) }],
      n: 2,
      max_tokens: 64,
      temperature: 0.7,
      top_p: 0.9,
    });
    expect(set).toEqual({
      texts: [
        ["A", ""],
        ["B", ""],
      ],
      stopped: [
        [true, false],
        [true, false],
      ],
      valid: [true, false],
    });
  });

  it("a null in comparator_api_extra_body removes a field (max_tokens → max_completion_tokens)", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.openai(req)));
    const c = make({
      format: "openai",
      url: `${server.origin}/v1/chat/completions`,
      model: "o4-mini",
      extraBody: { max_tokens: null, max_completion_tokens: 500, temperature: null, top_p: null },
    });
    await c.sample([{}], [["p"]], 1);
    expect(server.requests[0]!.body).toEqual({ model: "o4-mini", messages: [{ role: "user", content: "p" }], n: 1, max_completion_tokens: 500 });
  });
});

describe("anthropic format (Messages)", () => {
  it("decentralized: x-api-key, anthropic-version, one request per candidate, first text block, stop_reason", async () => {
    server = await startServer((req, res) => {
      const prompt = (req.body as { messages: { content: string }[] }).messages[0]!.content;
      sendJson(res, 200, {
        type: "message",
        content: [
          { type: "thinking", thinking: "hmm" },
          { type: "text", text: `${prompt}:${req.index}` },
          { type: "text", text: "second" },
        ],
        stop_reason: prompt.startsWith("a1") ? "max_tokens" : "end_turn",
      });
    });
    const c = make({ format: "anthropic", url: `${server.origin}/v1/messages`, model: "claude-sonnet-4-20250514" });
    const sets = await c.sample(ITEMS, PROMPTS, 2);
    expect(server.requests).toHaveLength(8);
    for (const r of server.requests) {
      expect(r.method).toBe("POST");
      expect(r.path).toBe("/v1/messages");
      expect(r.headers["x-api-key"]).toBe(KEY);
      expect(r.headers["anthropic-version"]).toBe("2023-06-01");
      expect(r.headers["authorization"]).toBeUndefined();
      expect(r.headers["content-type"]).toBe("application/json");
    }
    expect(byPrompt(server.requests, "messages", "a1 item0")[0]!.body).toEqual({
      model: "claude-sonnet-4-20250514",
      max_tokens: 64,
      messages: [{ role: "user", content: "a1 item0" }],
      temperature: 0.7,
      top_p: 0.9,
    });
    expect(sets[0]!.texts[1]!.every((t) => t.startsWith("a1 item0:"))).toBe(true);
    expect(sets[0]!.stopped).toEqual([
      [true, true],
      [false, false],
    ]);
    expect(sets[1]!.valid).toEqual([true, true]);
  });

  it("omits top_p when it is 1, keeps a user's anthropic-version, accepts the messages alias", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.anthropic(req, "hi", "stop_sequence")));
    const c = make({
      format: "messages",
      url: `${server.origin}/v1/messages`,
      model: "claude-x",
      generation: { ...GEN, topP: 1 },
      headers: { "Anthropic-Version": "2024-01-01", "anthropic-beta": "b1" },
    });
    const [set] = await c.sample([{}], [["p"]], 1);
    expect(server.requests[0]!.body).toEqual({ model: "claude-x", max_tokens: 64, messages: [{ role: "user", content: "p" }], temperature: 0.7 });
    expect(server.requests[0]!.headers["anthropic-version"]).toBe("2024-01-01");
    expect(server.requests[0]!.headers["anthropic-beta"]).toBe("b1");
    expect(set).toEqual({ texts: [["hi"]], stopped: [[true]], valid: [true] });
  });

  it("centralized: one request per joint candidate", async () => {
    server = await startServer((req, res) => sendJson(res, 200, reply.anthropic(req, req.index % 2 === 0 ? tagged("A", "B") : "nothing")));
    const adapter = new TaggedCentralizedAdapter();
    const c = make({ format: "anthropic", url: `${server.origin}/v1/messages`, model: "claude-x", generationMode: "centralized", maxConcurrency: 1 });
    const [set] = await c.sample([ITEMS[1]!], [PROMPTS[1]!], 3);
    expect(server.requests).toHaveLength(3);
    for (const r of server.requests)
      expect(r.body).toEqual({
        model: "claude-x",
        max_tokens: 64,
        messages: [{ role: "user", content: adapter.buildPrompt(ITEMS[1]!, PROMPTS[1]!) }],
        temperature: 0.7,
        top_p: 0.9,
      });
    expect(set).toEqual({
      texts: [
        ["A", "", "A"],
        ["B", "", "B"],
      ],
      stopped: [
        [true, false, true],
        [true, false, true],
      ],
      valid: [true, false, true],
    });
  });
});

describe("openai_responses format (Responses API; aliases responses, codex)", () => {
  it("decentralized: Bearer key, input, max_output_tokens, temperature and top_p; output_text after reasoning; status", async () => {
    server = await startServer((req, res) => {
      const input = (req.body as { input: string }).input;
      sendJson(res, 200, reply.responses(req, `${input}!`, input.startsWith("a1") ? "incomplete" : "completed"));
    });
    const c = make({ format: "codex", url: `${server.origin}/v1/responses`, model: "gpt-5.1-codex" });
    expect(c.format).toBe("openai_responses");
    const sets = await c.sample(ITEMS, PROMPTS, 2);
    expect(server.requests).toHaveLength(8);
    const r = byPrompt(server.requests, "input", "a0 item0")[0]!;
    expect(r.path).toBe("/v1/responses");
    expect(r.headers["authorization"]).toBe(`Bearer ${KEY}`);
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.body).toEqual({ model: "gpt-5.1-codex", input: "a0 item0", max_output_tokens: 64, temperature: 0.7, top_p: 0.9 });
    expect(sets[0]).toEqual({
      texts: [
        ["a0 item0!", "a0 item0!"],
        ["a1 item0!", "a1 item0!"],
      ],
      stopped: [
        [true, true],
        [false, false],
      ],
      valid: [true, true],
    });
  });

  it("centralized, and a reasoning model without temperature / top_p through extra body nulls", async () => {
    server = await startServer((req, res) =>
      sendJson(res, 200, { status: "completed", output: [{ type: "message", content: [{ type: "text", text: tagged("L", "R") }] }] }),
    );
    const adapter = new TaggedCentralizedAdapter();
    const c = make({
      format: "responses",
      url: `${server.origin}/v1/responses`,
      model: "gpt-5",
      generationMode: "centralized",
      extraBody: { temperature: null, top_p: null, reasoning: { effort: "low" } },
    });
    const [set] = await c.sample([ITEMS[0]!], [PROMPTS[0]!], 2);
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]!.body).toEqual({
      model: "gpt-5",
      input: adapter.buildPrompt(ITEMS[0]!, PROMPTS[0]!),
      max_output_tokens: 64,
      reasoning: { effort: "low" },
    });
    expect(set).toEqual({
      texts: [
        ["L", "L"],
        ["R", "R"],
      ],
      stopped: [
        [true, true],
        [true, true],
      ],
      valid: [true, true],
    });
  });
});

describe("parseResponse without a source", () => {
  it("names the URL as unknown and the status as 200 in its errors", () => {
    let err: unknown;
    try {
      parseResponse("openai", { choices: [7] }, "");
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).toBe(
      "comparator API (openai) POST <unknown URL>: malformed completion at $.choices[0]: a number where a choice object belongs; a Chat Completions server must return choices[].message.content as a string (or null for no text)",
    );
    expect((err as { status: number }).status).toBe(200);
  });
});

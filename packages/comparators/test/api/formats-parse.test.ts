// The formats' pure parts called directly: format names, default key variables, request bodies,
// response parsing (every malformed-completion message asserted whole), paths, n planning.
import { describe, expect, it } from "vitest";
import { ApiMalformedResponseError } from "../../src/api/errors.js";
import {
  buildBody,
  defaultKeyEnv,
  followPath,
  jsonSafe,
  normalizeApiFormat,
  oneCandidatePerRequest,
  parseResponse,
  parseResponseBody,
  planCounts,
  providerNLimit,
  type ApiFormat,
} from "../../src/api/formats.js";

const SOURCE = { url: "http://h/x" };
const GEN = { maxNewTokens: 8, temperature: 0.5, topP: 1, topK: null };

/** The error parse throws; fails when it parses. */
function malformed(fn: () => unknown): ApiMalformedResponseError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiMalformedResponseError);
    return e as ApiMalformedResponseError;
  }
  throw new Error("expected an error");
}

const EXPECTED = {
  generic:
    'the server must return each completion as a JSON string, or as an object with a string "text" (or "content", "completion", "response", "message.content")',
  openai: "a Chat Completions server must return choices[].message.content as a string (or null for no text)",
  anthropic: 'a Messages server must return content[] as objects, each "text" block with a string "text"',
  openai_responses: 'a Responses server must return output[] items as objects, each "output_text" content block with a string "text"',
};

const kindOf = (format: ApiFormat, json: unknown, field = "") => malformed(() => parseResponse(format, json, field, SOURCE)).kind;

describe("format names and keys", () => {
  it("refuses a name that is not a string with the accepted list", () => {
    expect(() => normalizeApiFormat(5 as never)).toThrow(
      new Error(
        "comparator_api_format: unknown format 5; expected one of generic; openai (aliases: openai_chat, chat); anthropic (aliases: anthropic_messages, messages); openai_responses (aliases: responses, codex)",
      ),
    );
  });

  it("reads each format's default key variable; native formats ask for one candidate per request", () => {
    expect((["generic", "openai", "anthropic", "openai_responses"] as const).map(defaultKeyEnv)).toEqual([
      null,
      "OPENAI_API_KEY",
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
    ]);
    expect((["generic", "openai", "anthropic", "openai_responses"] as const).map(oneCandidatePerRequest)).toEqual([false, false, true, true]);
  });
});

describe("buildBody", () => {
  const spec = { prompt: "p", agentIdx: 1, batchItem: { a: 1 }, count: 2 };
  it("generic: sends the model only when set; top_k when set", () => {
    expect(buildBody("generic", spec, { model: null, generation: GEN, extraBody: null })).toEqual({
      prompt: "p",
      agent_idx: 1,
      num_return_sequences: 2,
      max_new_tokens: 8,
      temperature: 0.5,
      top_p: 1,
      batch_item: { a: 1 },
    });
    expect(buildBody("generic", spec, { model: "m", generation: { ...GEN, topK: 5 }, extraBody: { x: 1 } })).toMatchObject({ model: "m", top_k: 5, x: 1 });
  });

  it("anthropic: top_p only below 1; extra body nulls and undefineds remove fields", () => {
    expect(buildBody("anthropic", spec, { model: "c", generation: GEN, extraBody: null })).toEqual({
      model: "c",
      max_tokens: 8,
      messages: [{ role: "user", content: "p" }],
      temperature: 0.5,
    });
    expect(buildBody("anthropic", spec, { model: "c", generation: { ...GEN, topP: 0.9 }, extraBody: { temperature: undefined } })).toStrictEqual({
      model: "c",
      max_tokens: 8,
      messages: [{ role: "user", content: "p" }],
      top_p: 0.9,
    });
  });
});

describe("parseResponseBody", () => {
  it("a body that is not JSON: status, attempts and the redacted start of the body", () => {
    const e = malformed(() =>
      parseResponseBody("openai", "<html>sk-1 </html>", "", { ...SOURCE, status: 203, attempts: 2, redact: (t) => t.replace("sk-1", "[R]") }),
    );
    expect(e.message).toBe("comparator API (openai) POST http://h/x: HTTP 203 with a body that is not JSON after 2 attempts: <html>[R] </html>");
    expect([e.status, e.path, e.receivedType]).toEqual([203, null, "text that is not JSON"]);
    const d = malformed(() => parseResponseBody("generic", "oops", "", SOURCE));
    expect(d.message).toBe("comparator API (generic) POST http://h/x: HTTP 200 with a body that is not JSON: oops");
    expect(d.status).toBe(200);
  });

  it("a JSON body parses as parseResponse would", () => {
    expect(parseResponseBody("generic", '{"completions":["a"]}', "", SOURCE)).toEqual({ texts: ["a"], stopped: [false] });
  });
});

describe("malformed completions", () => {
  it("names the path, the JSON type with its value and what the server must return", () => {
    expect(kindOf("generic", { completions: [42] })).toBe(`malformed completion at $.completions[0]: a number (42), not a string; ${EXPECTED.generic}`);
    expect(kindOf("generic", { completions: [[1]] })).toBe(`malformed completion at $.completions[0]: an array ([1]), not a string; ${EXPECTED.generic}`);
    // only the first 1000 characters of a value are looked at: what follows a long run of spaces is not quoted
    expect(kindOf("generic", { completions: [[" ".repeat(1500) + "tail"]] })).toBe(
      `malformed completion at $.completions[0]: an array (["), not a string; ${EXPECTED.generic}`,
    );
    expect(kindOf("generic", { completions: [null, "x"] })).toBe(`malformed completion at $.completions[0]: null (null), not a string; ${EXPECTED.generic}`);
    expect(kindOf("generic", { completions: [{ text: 1n }] })).toBe(
      `malformed completion at $.completions[0].text: a bigint, not a string; ${EXPECTED.generic}`,
    );
    expect(kindOf("generic", { completions: [{ id: 1 }] })).toBe(
      `malformed completion at $.completions[0]: an object without a "text", "content", "completion", "response" or "message.content" field; ${EXPECTED.generic}`,
    );
    expect(kindOf("generic", { completions: [{ message: { content: 3 } }] })).toBe(
      `malformed completion at $.completions[0].message.content: a number (3), not a string; ${EXPECTED.generic}`,
    );
    expect(kindOf("generic", { out: 7 }, "out")).toBe(`malformed completion at $.out: a number (7), not a string; ${EXPECTED.generic}`);
    // a dotted response field is named as a JSON path: numeric segments (one digit or more) index arrays
    expect(kindOf("generic", { data: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, { items: [5] }] }, "data.10.items")).toBe(
      `malformed completion at $.data[10].items[0]: a number (5), not a string; ${EXPECTED.generic}`,
    );
    expect(kindOf("generic", { a1: { "1a": [5] } }, "a1.1a")).toBe(`malformed completion at $.a1.1a[0]: a number (5), not a string; ${EXPECTED.generic}`);
  });

  it("openai: a choice without message content reads its text; one with neither is skipped (a refusal or a tool call)", () => {
    const choices = [
      { message: { content: null }, text: "legacy", finish_reason: "stop" },
      { message: { role: "assistant" }, text: "no content" },
      { message: { content: null } },
      { message: { content: null }, text: null },
      { message: { content: "plain" }, finish_reason: "length" },
    ];
    expect(parseResponse("openai", { choices }, "", SOURCE)).toEqual({ texts: ["legacy", "no content", "plain"], stopped: [true, false, false] });
  });

  it("anthropic: blocks of other types are passed over, also ones without text", () => {
    const content = [{ type: "tool_use", id: "t1", input: {} }, { type: 5 }, { type: "text", text: "hi" }];
    expect(parseResponse("anthropic", { content, stop_reason: "end_turn" }, "", SOURCE)).toEqual({ texts: ["hi"], stopped: [true] });
  });

  it("generic: no completions anywhere is none (not an error); an empty or null response field falls back to the usual names", () => {
    for (const json of [null, 5, {}, { completions: [] }]) expect(parseResponse("generic", json, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("generic", { result: null, completions: ["x"] }, "result", SOURCE)).toEqual({ texts: ["x"], stopped: [false] });
    expect(parseResponse("generic", { result: "", outputs: ["y"] }, "result", SOURCE)).toEqual({ texts: ["y"], stopped: [false] });
    expect(parseResponse("generic", { data: ["a", "b"] }, "data.1", SOURCE)).toEqual({ texts: ["b"], stopped: [false] });
    expect(kindOf("generic", [{ text: "a".repeat(100) }, true])).toBe(`malformed completion at $[1]: a boolean (true), not a string; ${EXPECTED.generic}`);
    const long = kindOf("generic", { completions: [{ text: ["a".repeat(100)] }] });
    expect(long).toBe(`malformed completion at $.completions[0].text: an array (["${"a".repeat(78)}…), not a string; ${EXPECTED.generic}`);
    expect(kindOf("openai", { choices: [{ message: "hi" }] })).toBe(
      `malformed completion at $.choices[0].message: a string where the message object belongs; ${EXPECTED.openai}`,
    );
    expect(kindOf("openai", { choices: [null] })).toBe(`malformed completion at $.choices[0]: null where a choice object belongs; ${EXPECTED.openai}`);
    expect(kindOf("openai", { choices: [{ text: 5 }] })).toBe(`malformed completion at $.choices[0].text: a number (5), not a string; ${EXPECTED.openai}`);
    expect(kindOf("anthropic", { content: [[]] })).toBe(
      `malformed completion at $.content[0]: an array where a content block object belongs; ${EXPECTED.anthropic}`,
    );
    expect(kindOf("anthropic", { content: [{ type: "text" }] })).toBe(
      `malformed completion at $.content[0].text: undefined, not a string; ${EXPECTED.anthropic}`,
    );
    expect(kindOf("openai_responses", { output: [1] })).toBe(
      `malformed completion at $.output[0]: a number where an output item object belongs; ${EXPECTED.openai_responses}`,
    );
    const e = malformed(() => parseResponse("openai", { choices: [{ message: { content: 1 } }] }, "", { url: "u", status: 201 }));
    expect([e.status, e.attempts, e.path, e.receivedType]).toEqual([201, 0, "$.choices[0].message.content", "number"]);
  });

  it("quotes a value with secrets removed, and none without a JSON form", () => {
    const e = malformed(() => parseResponse("generic", { completions: [{ text: { k: "sk-9" } }] }, "", { ...SOURCE, redact: (t) => t.replace("sk-9", "[R]") }));
    expect(e.kind).toBe(`malformed completion at $.completions[0].text: an object ({"k":"[R]"}), not a string; ${EXPECTED.generic}`);
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(kindOf("generic", { completions: [{ text: cyclic }] })).toBe(
      `malformed completion at $.completions[0].text: an object, not a string; ${EXPECTED.generic}`,
    );
  });
});

describe("well-formed responses", () => {
  it("generic: the first non-empty text field, stopped by flag or reason; empty fields fall back", () => {
    const parsed = parseResponse(
      "generic",
      {
        completions: [
          { text: "", content: "c", stopped: false, finish_reason: "stop" },
          { completion: "d", finish_reason: "eos" },
          { response: "e", stop_reason: "length" },
          { text: "", message: { content: "" } },
          { message: { content: "m" }, stop_reason: "end_turn" },
          { text: "t", stopped: true },
          { text: "u", finish_reason: 1 },
        ],
      },
      "",
      SOURCE,
    );
    expect(parsed).toEqual({ texts: ["c", "d", "e", "", "m", "t", "u"], stopped: [false, true, false, false, true, true, false] });
    for (const reason of ["stop", "end_turn", "stop_sequence", "eos", "eos_token", "completed"]) {
      expect(parseResponse("generic", { completions: [{ text: "x", finish_reason: reason }] }, "", SOURCE).stopped).toEqual([true]);
    }
  });

  it("generic: the response field, else the first non-empty fallback, else nothing", () => {
    expect(parseResponse("generic", { a: { b: [{ text: "x" }] } }, "a.b.0.text", SOURCE)).toEqual({ texts: ["x"], stopped: [false] });
    expect(parseResponse("generic", { completions: [], responses: "", outputs: ["o"], choices: ["c"] }, "none", SOURCE)).toEqual({
      texts: ["o"],
      stopped: [false],
    });
    expect(parseResponse("generic", { responses: ["r"] }, "", SOURCE).texts).toEqual(["r"]);
    expect(parseResponse("generic", { choices: ["c"] }, "", SOURCE).texts).toEqual(["c"]);
    expect(parseResponse("generic", { completions: null, outputs: [] }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("generic", "plain", "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("generic", ["a", "b"], "", SOURCE).texts).toEqual(["a", "b"]);
    expect(parseResponse("generic", { completions: ["y"] }, "constructor", SOURCE).texts).toEqual(["y"]);
  });

  it("openai: content, else text; content null is no completion; finish_reason stop", () => {
    expect(
      parseResponse(
        "openai",
        {
          choices: [
            { message: { content: "a" }, finish_reason: "stop" },
            { message: { content: null } },
            { message: null, text: "t", finish_reason: "length" },
            {},
          ],
        },
        "",
        SOURCE,
      ),
    ).toEqual({ texts: ["a", "t"], stopped: [true, false] });
    expect(parseResponse("openai", { choices: "x" }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("openai", null, "", SOURCE)).toEqual({ texts: [], stopped: [] });
  });

  it("anthropic: the first text block; end_turn and stop_sequence stop", () => {
    const content = [{ type: "thinking", text: 1 }, { type: 2 }, { type: "text", text: "a" }, { type: "text", text: "b" }];
    expect(parseResponse("anthropic", { content, stop_reason: "stop_sequence" }, "", SOURCE)).toEqual({ texts: ["a"], stopped: [true] });
    expect(parseResponse("anthropic", { content, stop_reason: "end_turn" }, "", SOURCE).stopped).toEqual([true]);
    expect(parseResponse("anthropic", { content, stop_reason: "max_tokens" }, "", SOURCE).stopped).toEqual([false]);
    expect(parseResponse("anthropic", { content: [{ type: "tool_use" }] }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("anthropic", { content: "a" }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("anthropic", [], "", SOURCE)).toEqual({ texts: [], stopped: [] });
  });

  it("openai_responses: the first output item with a text block; completed stops", () => {
    const output = [
      { type: "reasoning" },
      { content: [{ type: "refusal" }] },
      { content: [{ type: "text", text: "a" }] },
      { content: [{ type: "output_text", text: "b" }] },
    ];
    expect(parseResponse("openai_responses", { output, status: "completed" }, "", SOURCE)).toEqual({ texts: ["a"], stopped: [true] });
    expect(parseResponse("openai_responses", { output, status: "incomplete" }, "", SOURCE).stopped).toEqual([false]);
    expect(parseResponse("openai_responses", { output: output.slice(0, 2) }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("openai_responses", { output: {} }, "", SOURCE)).toEqual({ texts: [], stopped: [] });
    expect(parseResponse("openai_responses", "x", "", SOURCE)).toEqual({ texts: [], stopped: [] });
  });
});

describe("followPath", () => {
  it("indexes arrays by numeric segments and objects by own keys only", () => {
    expect(followPath({ a: [{ b: 1 }] }, "a.0.b")).toBe(1);
    expect(followPath({ a: { "0": 2 } }, "a.0")).toBe(2);
    expect(followPath({ a: [1] }, "a.x")).toBeUndefined();
    expect(followPath({ a: 1 }, "a.b")).toBeUndefined();
    expect(followPath({}, "toString")).toBeUndefined();
    expect(followPath({ a: null }, "a")).toBeNull();
  });
});

describe("n planning", () => {
  it("providers' n limits by URL or model name", () => {
    expect(providerNLimit("HTTPS://API.DEEPSEEK.COM/x", null)).toBe(1);
    expect(providerNLimit("http://h/x", "DeepSeek-Chat")).toBe(1);
    expect(providerNLimit("https://API.openai.com/v1", null)).toBe(128);
    expect(providerNLimit("not a url", null)).toBeNull();
  });

  it("a cap below 1 still asks one at a time; generic ignores the provider limit", () => {
    expect(planCounts("openai", 3, 0, null)).toEqual([1, 1, 1]);
    expect(planCounts("generic", 4, null, 1)).toEqual([4]);
    expect(planCounts("openai", -1, null, null)).toEqual([]);
  });
});

describe("jsonSafe", () => {
  it("keeps JSON values and converts the rest", () => {
    expect(jsonSafe({ n: 1, s: "s", b: false, z: null, inf: -Infinity, big: 2n ** 70n, small: 5n, u: undefined, f: () => 1 })).toStrictEqual({
      n: 1,
      s: "s",
      b: false,
      z: null,
      inf: "-Infinity",
      big: "1180591620717411303424",
      small: 5,
    });
    expect(jsonSafe([undefined, Symbol("s"), new Date(0), new Date(NaN)])).toEqual([null, null, "1970-01-01T00:00:00.000Z", null]);
    expect(jsonSafe(new Map<unknown, unknown>([[1, new Set([2])]]))).toEqual({ "1": [2] });
    expect(jsonSafe(new Uint8Array([1, 2]))).toEqual([1, 2]);
    const shared = { x: 1 };
    expect(jsonSafe([shared, shared])).toEqual([{ x: 1 }, { x: 1 }]);
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    expect(jsonSafe(cyclic)).toEqual(["[Circular]"]);
  });
});

// Issue 17, case 6: the response parsers of every API format, fed thousands of generated bodies
// and JSON values. Each either returns well-formed completions (strings, one stopped flag each)
// or throws ApiMalformedResponseError naming where and what is wrong; nothing else may escape.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ApiMalformedResponseError } from "../../src/index.js";
import { parseResponse, parseResponseBody, type ApiFormat, type ParsedCompletions } from "../../src/api/formats.js";

const FORMATS: readonly ApiFormat[] = ["generic", "openai", "anthropic", "openai_responses"];
const RUNS = { numRuns: 1000 };
const SOURCE = { url: "http://127.0.0.1:1/x", attempts: 1 };

/** Runs a parse; true when it returned well-formed completions or threw the typed, clear error. */
function wellBehaved(parse: () => ParsedCompletions): boolean {
  let out: ParsedCompletions;
  try {
    out = parse();
  } catch (e) {
    if (!(e instanceof ApiMalformedResponseError)) throw e;
    expect(e.message.length).toBeGreaterThan(0);
    expect(e.message).toContain(`POST ${SOURCE.url}: `);
    if (e.path === null) {
      expect(e.receivedType).toBe("text that is not JSON");
      expect(e.message).toContain("with a body that is not JSON");
    } else {
      expect(e.message).toContain(`malformed completion at ${e.path}: `);
      expect(e.message).toContain(e.receivedType);
      expect(e.message).toMatch(/ must return /);
    }
    return true;
  }
  expect(out.texts.length).toBe(out.stopped.length);
  expect(out.texts.every((t) => typeof t === "string")).toBe(true);
  expect(out.stopped.every((s) => typeof s === "boolean")).toBe(true);
  return true;
}

/** Any JS value, the odd ones included (bigints, boxed values, maps, sparse arrays, null prototypes). */
const anything = fc.anything({
  withBigInt: true,
  withBoxedValues: true,
  withMap: true,
  withSet: true,
  withDate: true,
  withTypedArray: true,
  withNullPrototype: true,
  withSparseArray: true,
  withObjectString: true,
  maxDepth: 4,
});

/** A leaf where a completion or a field of one goes: mostly not a string, sometimes one. */
const leaf = fc.oneof(fc.string(), fc.jsonValue({ maxDepth: 2 }), anything);
const responseField = fc.oneof(fc.constant("completions"), fc.constant("data.0.outputs"), fc.string({ maxLength: 12 }));

/** Values shaped like each format's response, with arbitrary leaves: they reach the deep branches. */
const shaped: Record<ApiFormat, fc.Arbitrary<unknown>> = {
  generic: fc.oneof(
    fc.record({ completions: fc.oneof(leaf, fc.array(leaf, { maxLength: 6 })) }),
    fc.array(
      fc.oneof(
        leaf,
        fc.record(
          {
            text: leaf,
            content: leaf,
            completion: leaf,
            response: leaf,
            message: fc.oneof(leaf, fc.record({ content: leaf })),
            finish_reason: leaf,
            stopped: leaf,
          },
          { requiredKeys: [] },
        ),
      ),
      { maxLength: 6 },
    ),
    fc.record({ data: fc.array(fc.record({ outputs: fc.array(leaf, { maxLength: 4 }) }), { maxLength: 2 }) }),
    fc.record({ responses: fc.array(leaf, { maxLength: 4 }), outputs: leaf, choices: leaf }, { requiredKeys: [] }),
  ),
  openai: fc.record({
    choices: fc.oneof(
      leaf,
      fc.array(
        fc.oneof(
          leaf,
          fc.record({ message: fc.oneof(leaf, fc.record({ content: leaf }, { requiredKeys: [] })), text: leaf, finish_reason: leaf }, { requiredKeys: [] }),
        ),
        { maxLength: 6 },
      ),
    ),
  }),
  anthropic: fc.record(
    {
      content: fc.oneof(
        leaf,
        fc.array(fc.oneof(leaf, fc.record({ type: fc.oneof(fc.constant("text"), fc.constant("thinking"), leaf), text: leaf }, { requiredKeys: [] })), {
          maxLength: 4,
        }),
      ),
      stop_reason: leaf,
    },
    { requiredKeys: [] },
  ),
  openai_responses: fc.record(
    {
      status: leaf,
      output: fc.oneof(
        leaf,
        fc.array(
          fc.oneof(
            leaf,
            fc.record(
              {
                type: leaf,
                content: fc.oneof(
                  leaf,
                  fc.array(
                    fc.oneof(leaf, fc.record({ type: fc.oneof(fc.constant("output_text"), fc.constant("text"), leaf), text: leaf }, { requiredKeys: [] })),
                    { maxLength: 3 },
                  ),
                ),
              },
              { requiredKeys: [] },
            ),
          ),
          { maxLength: 3 },
        ),
      ),
    },
    { requiredKeys: [] },
  ),
};

/** Bodies that are not JSON, or JSON cut, spliced or garbled. */
const malformedBody = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.json().chain((j) => fc.nat({ max: Math.max(0, j.length - 1) }).map((cut) => j.slice(0, cut))),
  fc
    .tuple(fc.json(), fc.nat(), fc.string({ minLength: 1, maxLength: 3 }))
    .map(([j, at, junk]) => j.slice(0, at % (j.length + 1)) + junk + j.slice(at % (j.length + 1))),
  fc.constantFrom("", " ", "null", "[", "{", '{"choices": [', "<html>502 Bad Gateway</html>", 'data: {"choices": []}\n\n', "\uFEFF{}", "NaN", "1e999"),
);

describe.each(FORMATS)("%s parser", (format) => {
  it("any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), responseField, (json, field) => wellBehaved(() => parseResponse(format, json, field, SOURCE))),
      RUNS,
    );
  });

  it("any JS value (bigints, boxed values, maps, sparse arrays, null prototypes)", () => {
    fc.assert(
      fc.property(anything, responseField, (value, field) => wellBehaved(() => parseResponse(format, value, field, SOURCE))),
      RUNS,
    );
  });

  it("values shaped like its responses, with arbitrary leaves", () => {
    fc.assert(
      fc.property(shaped[format], (value) => wellBehaved(() => parseResponse(format, value, "completions", SOURCE))),
      RUNS,
    );
  });

  it("bodies: malformed text, and its shaped responses serialised", () => {
    const serialised = shaped[format].map((v) => {
      try {
        return JSON.stringify(v) ?? "undefined";
      } catch {
        return "{";
      }
    });
    fc.assert(
      fc.property(fc.oneof(malformedBody, serialised), responseField, (body, field) => wellBehaved(() => parseResponseBody(format, body, field, SOURCE))),
      RUNS,
    );
  });

  it("huge and deeply nested responses", () => {
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const bodies: unknown[] = [
      deep,
      { completions: [deep] },
      { choices: [{ message: { content: deep } }] },
      { content: [{ type: "text", text: deep }] },
      { output: [{ content: [{ type: "output_text", text: deep }] }] },
      { completions: Array.from({ length: 200_000 }, (_, i) => `c${i}`) },
      { choices: Array.from({ length: 200_000 }, () => ({ message: { content: "x" }, finish_reason: "stop" })) },
      { completions: Array.from({ length: 200_000 }, (_, i) => i) },
    ];
    for (const b of bodies) expect(wellBehaved(() => parseResponse(format, b, "completions", SOURCE))).toBe(true);
    const deepText = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    expect(wellBehaved(() => parseResponseBody(format, deepText, "completions", SOURCE))).toBe(true);
    expect(wellBehaved(() => parseResponseBody(format, `{"completions": [${"1,".repeat(100_000)}1]}`, "completions", SOURCE))).toBe(true);
  });
});

describe("well-formed responses still parse", () => {
  it("string completions come back as they were sent, in every format", () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { minLength: 1, maxLength: 5 }), (texts) => {
        const bodies: Record<ApiFormat, unknown> = {
          generic: { completions: texts },
          openai: { choices: texts.map((t) => ({ message: { content: t }, finish_reason: "stop" })) },
          anthropic: { content: [{ type: "text", text: texts[0] }], stop_reason: "end_turn" },
          openai_responses: { status: "completed", output: [{ type: "message", content: [{ type: "output_text", text: texts[0] }] }] },
        };
        for (const format of FORMATS) {
          const want = format === "generic" || format === "openai" ? texts : [texts[0]!];
          expect(parseResponseBody(format, JSON.stringify(bodies[format]), "completions", SOURCE)).toEqual({
            texts: want,
            stopped: want.map(() => format !== "generic"),
          });
        }
        return true;
      }),
      RUNS,
    );
  });
});

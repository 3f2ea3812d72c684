// The API comparator's error classes and the helpers that keep credentials out of them, one by
// one: every message asserted whole, every redaction on both sides of its rule.
import { describe, expect, it } from "vitest";
import {
  ApiCallCancelled,
  ApiComparatorError,
  ApiMalformedResponseError,
  ApiResponseTooLargeError,
  ApiSettingsError,
  ApiTooManyCompletionsError,
  BODY_SNIPPET_CHARS,
  displayUrl,
  headerSecrets,
  isCredentialHeader,
  jsonTypeOf,
  makeRedactor,
  MIN_SCRUBBED_SECRET_CHARS,
  REDACTED,
  redactHeaderSecrets,
  redactUrlSecrets,
  snippet,
  urlSecrets,
} from "../../src/api/errors.js";

describe("makeRedactor", () => {
  it("removes every occurrence of each secret and of its URL-encoded form, longest first", () => {
    const redact = makeRedactor(["a/b c", "sk-1", null, ""]);
    expect(redact("x a/b c y a%2Fb%20c z sk-1 sk-1")).toBe("x [REDACTED] y [REDACTED] z [REDACTED] [REDACTED]");
    // a secret inside a longer one: the longer goes whole, not as the shorter's leftovers
    expect(makeRedactor(["abc", "abcdef"])("abcdef abc")).toBe("[REDACTED] [REDACTED]");
    expect(makeRedactor(["abcdef", "abc"])("abcdef abc")).toBe("[REDACTED] [REDACTED]");
    expect(REDACTED).toBe("[REDACTED]");
  });

  it("leaves text as it is when there is no secret", () => {
    expect(makeRedactor([])("a b")).toBe("a b");
    expect(makeRedactor([null, ""])("a  b")).toBe("a  b");
    // an empty secret is no secret: it would otherwise split the text at every character
    expect(makeRedactor(["", "k"])("ab k")).toBe("ab [REDACTED]");
  });
});

describe("urlSecrets", () => {
  it("gives the non-empty values of credential-like query parameters", () => {
    expect(urlSecrets("https://h.example/v1?key=k1&model=m&api_key=k2&token=&X-Amz-Signature=s3")).toEqual(["k1", "k2", "s3"]);
    expect(urlSecrets("https://h.example/v1")).toEqual([]);
    expect(urlSecrets("not a url?key=k")).toEqual([]);
  });
});

describe("displayUrl and redactUrlSecrets", () => {
  it("drop userinfo and replace credential-like query values; an unparseable URL shows as <invalid URL>", () => {
    expect(displayUrl("https://u:p@h.example/v1?token=t&a=1")).toBe("https://h.example/v1?token=REDACTED&a=1");
    expect(displayUrl("nope")).toBe("<invalid URL>");
    expect(redactUrlSecrets("https://u:p@h.example/v1?token=t&a=1")).toBe("https://h.example/v1?token=REDACTED&a=1");
  });

  it("keep what the user wrote when it is not a URL, its secrets redacted", () => {
    expect(redactUrlSecrets("my endpoint")).toBe("my endpoint");
    expect(redactUrlSecrets("host/v1 Bearer sk-abcdefghijklmnop")).not.toContain("sk-abcdefghijklmnop");
    expect(redactUrlSecrets(42 as unknown as string)).toBe(42);
  });
});

describe("credential headers", () => {
  it("are named like a credential anywhere in the name, or carry a scheme value", () => {
    const cases: [string, string, boolean][] = [
      ["Authorization", "x", true],
      ["x-api-key", "x", true],
      ["X-Auth-User", "x", true],
      ["X-Api-Key-Id", "x", true],
      ["X-Session-Id", "x", true],
      // anywhere in the name, any case: names the record rule (its last words) lets through
      ...[
        "X-AUTH-User",
        "X-Token-Type",
        "X-Secret-Name",
        "X-Key-Name",
        "X-Password-Hint",
        "X-Passwd-Hint",
        "X-Signature-Alg",
        "X-Credential-Scope",
        "X-Cookie-Name",
        "X-Session-Name",
      ].map((name): [string, string, boolean] => [name, "x", true]),
      ["Cookie", "x", true],
      ["X-Signature", "x", true],
      ["X-Credential", "x", true],
      ["X-Passwd", "x", true],
      ["X-Password", "x", true],
      ["X-Secret", "x", true],
      ["X-Token", "x", true],
      ["X-Custom", "Bearer abc", true],
      ["X-Custom", "  basic dXNlcg==", true],
      ["X-Custom", "Token t", true],
      ["X-Custom", "Digest d", true],
      ["X-Custom", "ApiKey k", true],
      ["X-Custom", "Bearer", false],
      ["X-Custom", "Bearer ", false],
      ["X-Custom", "my bearer abc", false],
      ["X-Custom", "Bearer abc\nmore", true],
      ["anthropic-version", "2023-06-01", false],
      ["Content-Type", "application/json", false],
    ];
    expect(cases.map(([name, value]) => isCredentialHeader(name, value))).toEqual(cases.map(([, , secret]) => secret));
  });

  it("redactHeaderSecrets replaces their values and keeps the others", () => {
    expect(redactHeaderSecrets({ Authorization: "Bearer k", "X-Custom": "Basic u", "anthropic-beta": "b" })).toEqual({
      Authorization: "[REDACTED]",
      "X-Custom": "[REDACTED]",
      "anthropic-beta": "b",
    });
    expect(redactHeaderSecrets({})).toEqual({});
  });

  it("headerSecrets gives the trimmed whole value and the credential after a scheme", () => {
    expect(headerSecrets({ Authorization: " Bearer  tok-1 ", "x-api-key": " k2 ", "X-Custom": "plain" })).toEqual(["Bearer  tok-1", "tok-1", "k2"]);
    expect(headerSecrets({})).toEqual([]);
  });
});

describe("snippet", () => {
  it("collapses whitespace, removes secrets, trims and cuts to the limit with an ellipsis", () => {
    const redact = makeRedactor(["sk-9"]);
    expect(snippet("  a\n\t b  sk-9 \n", redact)).toBe("a b [REDACTED]");
    expect(snippet("abcdef", redact, 6)).toBe("abcdef");
    expect(snippet("abcdefg", redact, 6)).toBe("abcdef…");
    expect(BODY_SNIPPET_CHARS).toBe(300);
    expect(snippet("x".repeat(301), redact)).toBe(`${"x".repeat(300)}…`);
    expect(snippet("x".repeat(300), redact)).toBe("x".repeat(300));
    expect(MIN_SCRUBBED_SECRET_CHARS).toBe(8);
  });
});

describe("jsonTypeOf", () => {
  it("names null and arrays apart from objects", () => {
    expect([null, [], {}, "s", 1, true, undefined].map(jsonTypeOf)).toEqual(["null", "array", "object", "string", "number", "boolean", "undefined"]);
  });
});

describe("error classes", () => {
  it("ApiComparatorError reads format, URL, kind, attempts and detail", () => {
    const base = { format: "openai", url: "https://h.example/v1", kind: "HTTP 429", status: 429 };
    const e = new ApiComparatorError({ ...base, attempts: 3, detail: "slow down" });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe("ApiComparatorError");
    expect(e.message).toBe("comparator API (openai) POST https://h.example/v1: HTTP 429 after 3 attempts: slow down");
    expect([e.format, e.url, e.kind, e.status, e.attempts]).toEqual(["openai", "https://h.example/v1", "HTTP 429", 429, 3]);
    expect(new ApiComparatorError({ ...base, attempts: 1, detail: "" }).message).toBe(
      "comparator API (openai) POST https://h.example/v1: HTTP 429 after 1 attempt",
    );
    expect(new ApiComparatorError({ ...base, status: undefined, attempts: 0 }).message).toBe("comparator API (openai) POST https://h.example/v1: HTTP 429");
    expect(new ApiComparatorError({ ...base, attempts: 0 }).status).toBe(429);
  });

  it("ApiResponseTooLargeError says whether the length was declared or read, and how to fix it", () => {
    const info = { format: "generic", url: "http://h/x", attempts: 1, limitBytes: 1024 };
    const fix =
      'check that the server honours the token limit and does not stream (no "stream": true in comparator_api_extra_body), or raise comparator_api_max_response_bytes if replies this long are expected';
    const declared = new ApiResponseTooLargeError({ ...info, receivedBytes: 5000, declared: true });
    expect(declared).toBeInstanceOf(ApiComparatorError);
    expect(declared.name).toBe("ApiResponseTooLargeError");
    expect(declared.message).toBe(
      `comparator API (generic) POST http://h/x: response body larger than comparator_api_max_response_bytes=1024 (its Content-Length is 5000 bytes); not retried after 1 attempt: ${fix}`,
    );
    expect([declared.limitBytes, declared.receivedBytes, declared.declared]).toEqual([1024, 5000, true]);
    const read = new ApiResponseTooLargeError({ ...info, receivedBytes: 1100, declared: false });
    expect(read.message).toBe(
      `comparator API (generic) POST http://h/x: response body larger than comparator_api_max_response_bytes=1024 (reading stopped after 1100 bytes); not retried after 1 attempt: ${fix}`,
    );
    expect(read.declared).toBe(false);
  });

  it("ApiMalformedResponseError keeps where and what it found", () => {
    const e = new ApiMalformedResponseError({ format: "openai", url: "u", attempts: 1, kind: "bad", path: "$.choices[0]", receivedType: "number" });
    expect(e.name).toBe("ApiMalformedResponseError");
    expect(e.message).toBe("comparator API (openai) POST u: bad after 1 attempt");
    expect([e.path, e.receivedType]).toEqual(["$.choices[0]", "number"]);
  });

  it("ApiTooManyCompletionsError names who, the counts and the hint", () => {
    const e = new ApiTooManyCompletionsError({ format: "openai", url: "u", attempts: 0, who: "agent 1", requested: 2, received: 5, hint: "set n" });
    expect(e.name).toBe("ApiTooManyCompletionsError");
    expect(e.message).toBe("comparator API (openai) POST u: too many completions for agent 1: requested 2, received 5; set n");
    expect([e.requested, e.received]).toEqual([2, 5]);
  });

  it("ApiCallCancelled and ApiSettingsError", () => {
    const c = new ApiCallCancelled();
    expect([c.name, c.message]).toEqual(["ApiCallCancelled", "comparator API request cancelled: another request of the same sample() call failed"]);
    const s = new ApiSettingsError("m");
    expect([s.name, s.message, s instanceof Error]).toEqual(["ApiSettingsError", "m", true]);
  });
});

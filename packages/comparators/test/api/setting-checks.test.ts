// The comparator_api_* checks one by one: each message names the field, the value given and what
// is accepted, asserted whole; the bounds are tried on both sides.
import { describe, expect, it } from "vitest";
import { MAX_TIMER_MS } from "@pbrl/core-tensor";
import { ApiSettingsError } from "../../src/api/errors.js";
import {
  checkUrl,
  DEFAULT_MAX_RESPONSE_BYTES,
  exampleModel,
  HEADER_NAME,
  KEY_ENV_NAME,
  MAX_MAX_RESPONSE_BYTES,
  maxResponseBytes,
  MIN_MAX_RESPONSE_BYTES,
  nonNegativeInt,
  nonNegativeNumber,
  positiveInt,
  timeoutMs,
} from "../../src/api/setting-checks.js";

/** The error thrown by fn; fails when nothing is thrown or it is not an ApiSettingsError. */
function thrown(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiSettingsError);
    expect((e as Error).name).toBe("ApiSettingsError");
    return e as Error;
  }
  throw new Error("expected an error");
}

describe("checkUrl", () => {
  it("gives back the trimmed, normalized URL of an http(s) address", () => {
    expect(checkUrl("  https://api.openai.com/v1/chat/completions  ")).toBe("https://api.openai.com/v1/chat/completions");
    expect(checkUrl("http://LOCALHOST:8000")).toBe("http://localhost:8000/");
    // trimmed as a string: the URL parser itself strips only spaces and control characters
    expect(checkUrl("\u00a0https://h.example/v1\u2028")).toBe("https://h.example/v1");
  });

  it("refuses a missing, unparseable, non-http or credentialed URL, naming the field and the fix", () => {
    for (const url of ["", "   ", undefined as unknown as string, 5 as unknown as string]) {
      expect(thrown(() => checkUrl(url)).message).toBe("comparator_api_url is required for the API comparator");
    }
    expect(thrown(() => checkUrl("api.openai.com/v1")).message).toBe(
      "comparator_api_url is not a valid absolute URL (expected e.g. https://api.openai.com/v1/chat/completions)",
    );
    expect(thrown(() => checkUrl("ftp://h/x")).message).toBe("comparator_api_url must be an http:// or https:// URL, got ftp:");
    expect(thrown(() => checkUrl("file:///etc/passwd")).message).toBe("comparator_api_url must be an http:// or https:// URL, got file:");
    const credentials =
      "comparator_api_url must not contain credentials (user:password@); put the key in the environment variable named by comparator_api_key_env";
    expect(thrown(() => checkUrl("https://user@h.example/v1")).message).toBe(credentials);
    expect(thrown(() => checkUrl("https://:pw@h.example/v1")).message).toBe(credentials);
  });
});

describe("exampleModel", () => {
  it("names a model of each format's provider", () => {
    expect(exampleModel("anthropic")).toBe("claude-sonnet-4-20250514");
    expect(exampleModel("openai_responses")).toBe("gpt-5.1-codex");
    expect(exampleModel("openai")).toBe("gpt-4o-mini or deepseek-chat");
    expect(exampleModel("generic")).toBe("gpt-4o-mini or deepseek-chat");
  });
});

describe("integer and number checks", () => {
  it("positiveInt accepts integers from 1 and names the field and value otherwise", () => {
    expect(positiveInt(1, "f")).toBe(1);
    expect(positiveInt(7, "f")).toBe(7);
    expect(thrown(() => positiveInt(0, "comparator_api_max_concurrency")).message).toBe("comparator_api_max_concurrency must be an integer ≥ 1, got 0");
    expect(thrown(() => positiveInt(1.5, "f")).message).toBe("f must be an integer ≥ 1, got 1.5");
  });

  it("nonNegativeInt accepts integers from 0", () => {
    expect(nonNegativeInt(0, "f")).toBe(0);
    expect(nonNegativeInt(3, "f")).toBe(3);
    expect(thrown(() => nonNegativeInt(-1, "comparator_api_max_retries")).message).toBe("comparator_api_max_retries must be an integer ≥ 0, got -1");
    expect(thrown(() => nonNegativeInt(0.5, "f")).message).toBe("f must be an integer ≥ 0, got 0.5");
  });

  it("nonNegativeNumber accepts finite numbers from 0", () => {
    expect(nonNegativeNumber(0, "f")).toBe(0);
    expect(nonNegativeNumber(0.25, "f")).toBe(0.25);
    expect(thrown(() => nonNegativeNumber(-0.001, "comparator_api_retry_base")).message).toBe(
      "comparator_api_retry_base must be a finite number ≥ 0, got -0.001",
    );
    expect(thrown(() => nonNegativeNumber(Infinity, "f")).message).toBe("f must be a finite number ≥ 0, got Infinity");
    expect(thrown(() => nonNegativeNumber(NaN, "f")).message).toBe("f must be a finite number ≥ 0, got NaN");
  });
});

describe("maxResponseBytes", () => {
  it("defaults to 8 MiB and accepts 1024 to 256 MiB inclusive", () => {
    expect([DEFAULT_MAX_RESPONSE_BYTES, MIN_MAX_RESPONSE_BYTES, MAX_MAX_RESPONSE_BYTES]).toEqual([8388608, 1024, 268435456]);
    expect(maxResponseBytes(undefined)).toBe(8388608);
    expect(maxResponseBytes(1024)).toBe(1024);
    expect(maxResponseBytes(268435456)).toBe(268435456);
  });

  it("refuses values outside the range or not integers, naming the range", () => {
    for (const v of [1023, 268435457, 4096.5, NaN]) {
      expect(thrown(() => maxResponseBytes(v)).message).toBe(`comparator_api_max_response_bytes must be an integer from 1024 to 268435456 (256 MiB), got ${v}`);
    }
  });
});

describe("timeoutMs", () => {
  it("is 120 s when not set, the seconds in ms otherwise, capped at the longest timer delay", () => {
    expect(timeoutMs(undefined)).toBe(120_000);
    expect(timeoutMs(0.25)).toBe(250);
    expect(timeoutMs(1e12)).toBe(MAX_TIMER_MS);
  });

  it("refuses zero, negative and non-finite seconds", () => {
    for (const v of [0, -1, Infinity, NaN]) {
      expect(thrown(() => timeoutMs(v)).message).toBe(`comparator_api_timeout must be a positive number of seconds, got ${v}`);
    }
  });
});

describe("name patterns", () => {
  it("a key variable name is a shell identifier; a header name an HTTP token", () => {
    expect(["OPENAI_API_KEY", "_k", "a1"].map((n) => KEY_ENV_NAME.test(n))).toEqual([true, true, true]);
    expect(["1A", "sk-abc", "A B", "", "A\nB"].map((n) => KEY_ENV_NAME.test(n))).toEqual([false, false, false, false, false]);
    expect(["X-Api-Key", "anthropic-beta", "a!#$%&'*+.^_`|~9"].map((n) => HEADER_NAME.test(n))).toEqual([true, true, true]);
    expect(["bad header", "", "X:Y", "X\r\nY", "é"].map((n) => HEADER_NAME.test(n))).toEqual([false, false, false, false, false]);
  });
});

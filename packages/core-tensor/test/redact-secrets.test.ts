// The one redaction rule: credential-named keys at any depth, and values that look like secrets
// whatever their key, are replaced; everything else (numbers, flags, names of variables, counts
// of tokens) is kept; redacting twice changes nothing.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isSecretName, isSecretQueryName, REDACTED, redactRecord, redactSecrets, redactSecretText } from "../src/index.js";

describe("secret names", () => {
  it("a key whose last word(s) name a credential, in any case and with -, _ or nothing between words", () => {
    for (const name of [
      "api_key",
      "apiKey",
      "API-KEY",
      "apikey",
      "x-api-key",
      "X-Goog-Api-Key",
      "key",
      "token",
      "access_token",
      "session_token",
      "X-Amz-Security-Token",
      "secret",
      "client_secret",
      "password",
      "PASSWD",
      "auth",
      "Authorization",
      "Proxy-Authorization",
      "credential",
      "credentials",
      "access_key",
      "access_key_id",
      "AWSAccessKeyId",
      "accessKeyId",
      "secret_access_key",
      "private_key",
      "signature",
      "X-Amz-Signature",
      "sig",
      "cookie",
      "Set-Cookie",
      "api_key_2",
      "token2",
    ]) {
      expect(isSecretName(name), name).toBe(true);
    }
  });

  it("keeps names that only mention a credential: a variable's name, a header's name, a count of tokens", () => {
    for (const name of [
      "comparator_api_key_env",
      "comparator_api_key_header",
      "comparator_api_key_prefix",
      "max_new_tokens",
      "stop_token_ids",
      "hub_model_id",
      "monkey",
      "keys",
      "key_path",
      "author",
      "signal",
      "temperature",
    ]) {
      expect(isSecretName(name), name).toBe(false);
    }
    // An OAuth code or a session in a URL's query is a credential; as a record's key it is not.
    expect(isSecretQueryName("code")).toBe(true);
    expect(isSecretName("language_code")).toBe(false);
  });
});

describe("redactSecrets", () => {
  it("replaces the value of every credential-named key at any depth of objects and arrays", () => {
    const record = {
      trainer: "madpo_iter",
      comparator_api_extra_body: {
        api_key: "plain-value-1",
        temperature: 0.2,
        metadata: { user_id: "u", Authorization: "whatever-it-is" },
        tools: [{ name: "search", auth: { user: "a", password: "b" } }, { apiKey: 12345678 }],
      },
      comparator_api_key_env: "OPENAI_API_KEY",
      max_new_tokens: 6,
      madpo_score_last_token: true,
      access_key_id: null,
      client_secret: "",
    };
    expect(redactRecord(record)).toEqual({
      trainer: "madpo_iter",
      comparator_api_extra_body: {
        api_key: REDACTED,
        temperature: 0.2,
        metadata: { user_id: "u", Authorization: REDACTED },
        tools: [{ name: "search", auth: REDACTED }, { apiKey: REDACTED }],
      },
      comparator_api_key_env: "OPENAI_API_KEY",
      max_new_tokens: 6,
      // a flag, a null and an empty string hide nothing and stay readable
      madpo_score_last_token: true,
      access_key_id: null,
      client_secret: "",
    });
    // the record given is not changed
    expect(record.comparator_api_extra_body.api_key).toBe("plain-value-1");
  });

  it("replaces values that look like secrets whatever their key, keeping the rest of the text", () => {
    const cases: [string, string][] = [
      ["Bearer abcdef0123456789", `Bearer ${REDACTED}`],
      ["Basic dXNlcjpwdw==", `Basic ${REDACTED}`],
      ["sk-proj-AbCdEf0123456789xyzXYZ", REDACTED],
      ["use sk-ant-api03-AbCdEf0123456789xyz now", `use ${REDACTED} now`],
      ["hf_AbCdEfGhIjKlMnOpQrStUvWx", REDACTED],
      ["ghp_AbCdEfGhIjKlMnOpQrStUvWx0123", REDACTED],
      ["xoxb-1234567890-abcdefgh", REDACTED],
      ["AKIAIOSFODNN7EXAMPLE", REDACTED],
      ["https://user:pw@api.example.com/v1?team=a", "https://api.example.com/v1?team=a"],
      [
        "https://bucket.s3.amazonaws.com/o?access_key_id=ak-plain-1&X-Amz-Signature=f00d&X-Amz-Credential=c1&region=eu&sig=s2&token=t3&key=k4",
        "https://bucket.s3.amazonaws.com/o?access_key_id=REDACTED&X-Amz-Signature=REDACTED&X-Amz-Credential=REDACTED&region=eu&sig=REDACTED&token=REDACTED&key=REDACTED",
      ],
      ["https://app.example.com/cb#access_token=t9&state=s", "https://app.example.com/cb#access_token=REDACTED&state=s"],
      ["not a url?token=abc&x=1", "not a url?token=REDACTED&x=1"],
    ];
    for (const [text, safe] of cases) {
      expect(redactSecretText(text), text).toBe(safe);
      expect(redactSecrets({ note: text }), text).toEqual({ note: safe });
    }
  });

  it("keeps ordinary text, numbers and names that merely resemble secrets", () => {
    for (const text of [
      "Basic instructions: answer briefly",
      "task-runner sk-learn",
      "hf_transfer",
      "OPENAI_API_KEY",
      "https://api.openai.com/v1/chat/completions",
      "http://127.0.0.1:8000/v1?model=m&n=2",
      "Token limit reached",
      "/home/me/runs/exp1",
      "org/name",
    ]) {
      expect(redactSecretText(text), text).toBe(text);
    }
    expect(redactSecrets([1, true, null, "x"])).toEqual([1, true, null, "x"]);
  });

  it("is idempotent: a redacted record redacts to itself, so two redacted records compare equal", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const once = redactSecrets(v);
        expect(redactSecrets(once)).toEqual(once);
      }),
      { numRuns: 300 },
    );
    const r = { comparator_api_extra_body: { api_key: "X" }, comparator_api_url: "https://h/v1?api_key=X&m=1", h: "Bearer abcdef0123456789" };
    expect(redactRecord(redactRecord(r))).toEqual(redactRecord(r));
  });
});

// The one place the comparator_api_* config fields become the API comparator's settings.
import { describe, expect, it } from "vitest";
import { MADPOIterConfig } from "../src/index.js";
import { apiComparatorSettings } from "../src/comparator-factory.js";

describe("apiComparatorSettings", () => {
  const cfg = {
    comparator_policy: "api",
    comparator_api_url: "https://api.anthropic.com/v1/messages",
    comparator_api_format: "messages",
    comparator_api_model: "claude-sonnet-4-20250514",
    comparator_api_timeout: 30,
    comparator_api_headers: { "anthropic-beta": "x" },
    comparator_api_key_env: "ANTHROPIC_API_KEY",
    comparator_api_extra_body: { metadata: { user_id: "u" } },
    comparator_api_max_concurrency: 2,
    comparator_api_max_retries: 3,
    comparator_api_allow_partial: true,
    comparator_api_max_response_bytes: 65536,
  } as const;

  it("maps every comparator_api_* field (aliases resolved by the config)", () => {
    expect(apiComparatorSettings(MADPOIterConfig(cfg))).toEqual({
      format: "anthropic",
      url: "https://api.anthropic.com/v1/messages",
      model: "claude-sonnet-4-20250514",
      keyEnv: "ANTHROPIC_API_KEY",
      keyHeader: "Authorization",
      keyPrefix: "Bearer",
      headers: { "anthropic-beta": "x" },
      extraBody: { metadata: { user_id: "u" } },
      timeoutSeconds: 30,
      maxConcurrency: 2,
      maxRetries: 3,
      maxNPerRequest: null,
      allowPartial: true,
      responseField: "completions",
      maxResponseBytes: 65536,
    });
  });

  it("needs comparator_api_url", () => {
    expect(() => apiComparatorSettings(MADPOIterConfig({ comparator_policy: "current" }))).toThrow(/comparator_api_url is required/);
  });
});

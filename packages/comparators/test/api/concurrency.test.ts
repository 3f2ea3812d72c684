import { afterEach, describe, expect, it } from "vitest";
import { ApiComparator, type ApiComparatorOptions } from "../../src/index.js";
import { sendJson, sleepMs, startServer, type TestServer } from "./server.js";

const KEY = "sk-test-SECRET-7f3a";
const GEN = { maxNewTokens: 8, temperature: 0.7, topP: 0.9, topK: null, maxBatchRows: 8 };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Each reply is held this long so that requests overlap and the bound is reached even on a loaded machine.
const HOLD_MS = 300;

const ITEMS = [{ i: 0 }, { i: 1 }, { i: 2 }];
const PROMPTS = ITEMS.map((_, k) => [`item${k}-agent0`, `item${k}-agent1`]);

function promptOf(body: unknown): string {
  const b = body as { messages?: { content: string }[]; input?: string };
  return b.input ?? b.messages![0]!.content;
}

function make(o: Partial<ApiComparatorOptions> & Pick<ApiComparatorOptions, "format" | "url">): ApiComparator {
  return new ApiComparator({ generation: GEN, model: "m", env: { OPENAI_API_KEY: KEY, ANTHROPIC_API_KEY: KEY }, maxRetries: 0, log: () => undefined, ...o });
}

describe("concurrency bound (measured by the server)", () => {
  it("anthropic: 3 items × 2 agents × 4 candidates with maxConcurrency 3 → 24 requests, never more than 3 in flight", async () => {
    server = await startServer(async (req, res) => {
      await sleepMs(HOLD_MS);
      sendJson(res, 200, { content: [{ type: "text", text: `${promptOf(req.body)}#${req.index}` }], stop_reason: "end_turn" });
    });
    const c = make({ format: "anthropic", url: `${server.origin}/v1/messages`, maxConcurrency: 3 });
    const sets = await c.sample(ITEMS, PROMPTS, 4);
    expect(server.requests).toHaveLength(24);
    expect(server.maxInFlight).toBeLessThanOrEqual(3);
    expect(server.maxInFlight).toBeGreaterThanOrEqual(2);
    // Every candidate lands with the agent and item whose prompt produced it.
    sets.forEach((set, k) =>
      set.texts.forEach((texts, a) => {
        expect(texts).toHaveLength(4);
        for (const t of texts) expect(t.startsWith(`item${k}-agent${a}#`)).toBe(true);
      }),
    );
  });

  it("openai_responses with maxConcurrency 2", async () => {
    server = await startServer(async (req, res) => {
      await sleepMs(HOLD_MS);
      sendJson(res, 200, { status: "completed", output: [{ type: "message", content: [{ type: "output_text", text: promptOf(req.body) }] }] });
    });
    const c = make({ format: "openai_responses", url: `${server.origin}/v1/responses`, maxConcurrency: 2 });
    await c.sample(ITEMS.slice(0, 2), PROMPTS.slice(0, 2), 3);
    expect(server.requests).toHaveLength(12);
    expect(server.maxInFlight).toBe(2);
  });

  it("openai with n capped at 1 (DeepSeek) and maxConcurrency 4; the bound is shared by concurrent sample() calls", async () => {
    server = await startServer(async (req, res) => {
      await sleepMs(HOLD_MS);
      sendJson(res, 200, { choices: [{ message: { content: promptOf(req.body) }, finish_reason: "stop" }] });
    });
    const c = make({ format: "openai", url: `${server.origin}/v1/chat/completions`, model: "deepseek-chat", maxConcurrency: 4 });
    await Promise.all([c.sample(ITEMS, PROMPTS, 2), c.sample(ITEMS, PROMPTS, 2)]);
    expect(server.requests).toHaveLength(24);
    expect(server.maxInFlight).toBe(4);
  });
});

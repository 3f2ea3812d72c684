// comparator_api_timeout beyond what a timer can wait (2^31 − 1 ms, ~24.8 days): setTimeout fires
// such a delay at once, so every request used to "time out after 3000000 s" the moment it started.
import { afterEach, describe, expect, it } from "vitest";
import { ApiComparator } from "../../src/index.js";
import { reply, sendJson, sleepMs, startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("comparator_api_timeout longer than a timer can wait", () => {
  it.each([3_000_000, 1e12])("%s s waits for a slow server instead of timing out at once", async (timeoutSeconds) => {
    server = await startServer(async (req, res) => {
      await sleepMs(400);
      sendJson(res, 200, reply.openai(req));
    });
    const c = new ApiComparator({
      format: "openai",
      url: `${server.origin}/v1/chat/completions`,
      model: "m-1",
      env: { OPENAI_API_KEY: "sk-test" },
      generation: { maxNewTokens: 8, temperature: 0.7, topP: 1, topK: null },
      timeoutSeconds,
      maxRetries: 0,
      log: () => undefined,
    });
    const t0 = Date.now();
    const [set] = await c.sample([{}], [["p"]], 1);
    expect(set!.texts).toEqual([["r0c0"]]);
    expect(server.requests).toHaveLength(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(390);
  });
});

// Issue 28: a presigned-style URL (access_key_id=, X-Amz-Credential=, X-Amz-Signature=) keeps its
// credentials out of the comparator's description, its error messages and the form written to disk,
// even when the server echoes the URL back. A real HTTP server on 127.0.0.1.
import { afterEach, describe, expect, it } from "vitest";
import { ApiComparator, ApiComparatorError, redactUrlSecrets } from "../../src/index.js";
import { displayUrl } from "../../src/api/errors.js";
import { sendJson, startServer, type TestServer } from "./server.js";

const ID = "ak-plain-id-4417";
const CRED = "cred-plain-2291";
const SIG = "f00dfeedbeef0042";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("credentials in the comparator's URL", () => {
  it("access_key_id, X-Amz-Credential and X-Amz-Signature are redacted in the description, in errors and on disk", async () => {
    server = await startServer((req, res) => sendJson(res, 500, { error: `bad request to ${req.path}` }));
    const url = `${server.origin}/g?access_key_id=${ID}&X-Amz-Credential=${CRED}&X-Amz-Signature=${SIG}&region=eu`;
    const c = new ApiComparator({
      format: "generic",
      url,
      model: "m",
      generation: { maxNewTokens: 8, temperature: 0.7, topP: 0.9, topK: null },
      env: {},
      maxRetries: 0,
      timeoutSeconds: 10,
      log: () => undefined,
    });
    const safe = `${server.origin}/g?access_key_id=REDACTED&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&region=eu`;
    expect(c.displayUrl).toBe(safe);
    expect(displayUrl(url)).toBe(safe);
    expect(redactUrlSecrets(url)).toBe(safe);
    const err = await c.sample([{}], [["p"]], 1).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiComparatorError);
    const message = (err as Error).message;
    expect(message).toMatch(/HTTP 500/);
    // The server received the real URL and echoed it; the message shows none of its credentials.
    expect(server.requests[0]!.path).toContain(`access_key_id=${ID}`);
    for (const secret of [ID, CRED, SIG]) expect(message).not.toContain(secret);
    expect(message).toContain("region=eu");
  });
});

/**
 * Reads a request's JSON body with a size cap: the queue only ever needs a lease id, a name and
 * a sentence or two, and an unbounded read would let anything that reaches the port fill memory.
 */
import type { IncomingMessage } from "node:http";

export const MAX_BODY_BYTES = 64 * 1024;

export type BodyResult = { ok: true; value: unknown } | { ok: false; status: 400 | 413; message: string };

export function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyResult> {
  const tooBig: BodyResult = { ok: false, status: 413, message: `the body is over ${limit} bytes` };
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume(); // discard, so the reply can still be read by the client
    return Promise.resolve(tooBig);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      else chunks.push(chunk);
    });
    req.on("error", reject);
    req.on("end", () => {
      if (over) return resolve(tooBig);
      const text = Buffer.concat(chunks).toString("utf8");
      try {
        resolve({ ok: true, value: JSON.parse(text) as unknown });
      } catch (e) {
        resolve({ ok: false, status: 400, message: `the body is not JSON: ${(e as Error).message}` });
      }
    });
  });
}

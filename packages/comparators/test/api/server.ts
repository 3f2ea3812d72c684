/**
 * A real HTTP server on 127.0.0.1 (port 0) for the API comparator tests: each test programs the
 * handler, and the server records every request (method, path, lowercased headers, parsed body,
 * arrival and finish times) and the largest number of requests in flight at once.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  /** Path and query. */
  path: string;
  headers: Record<string, string>;
  /** JSON.parse of the body, or undefined when it is not JSON. */
  body: unknown;
  rawBody: string;
  /** 0-based arrival index. */
  index: number;
  start: number;
  end?: number;
}

export type Handler = (req: Recorded, res: ServerResponse, raw: IncomingMessage) => void | Promise<void>;

export interface TestServer {
  /** http://127.0.0.1:<port> */
  origin: string;
  requests: Recorded[];
  /** Largest number of requests in flight at once. */
  readonly maxInFlight: number;
  handler: Handler;
  close(): Promise<void>;
}

export async function startServer(handler: Handler): Promise<TestServer> {
  let inFlight = 0;
  let maxInFlight = 0;
  const requests: Recorded[] = [];
  const state = { handler };
  const server = createServer((req, res) => {
    inFlight += 1;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const chunks: Buffer[] = [];
    const rec: Recorded = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: {},
      body: undefined,
      rawBody: "",
      index: requests.length,
      start: Date.now(),
    };
    requests.push(rec);
    for (const [k, v] of Object.entries(req.headers)) rec.headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : (v ?? "");
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      inFlight -= 1;
      rec.end = Date.now();
    };
    res.on("close", finish);
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      rec.rawBody = Buffer.concat(chunks).toString("utf8");
      try {
        rec.body = JSON.parse(rec.rawBody);
      } catch {
        rec.body = undefined;
      }
      void Promise.resolve(state.handler(rec, res, req)).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(599);
        res.end(String(err));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    get maxInFlight() {
      return maxInFlight;
    },
    get handler() {
      return state.handler;
    },
    set handler(h: Handler) {
      state.handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

export const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Replies in each format, numbering completions by request index so the order can be checked. */
export const reply = {
  openai(req: Recorded, finish = "stop"): unknown {
    const n = (req.body as { n?: number }).n ?? 1;
    return {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: Array.from({ length: n }, (_, i) => ({ index: i, message: { role: "assistant", content: `r${req.index}c${i}` }, finish_reason: finish })),
    };
  },
  anthropic(req: Recorded, text = `r${req.index}`, stopReason = "end_turn"): unknown {
    return { id: "msg_1", type: "message", role: "assistant", content: [{ type: "text", text }], stop_reason: stopReason };
  },
  responses(req: Recorded, text = `r${req.index}`, status = "completed"): unknown {
    return {
      id: "resp_1",
      object: "response",
      status,
      output: [
        { type: "reasoning", summary: [] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text, annotations: [] }] },
      ],
    };
  },
  generic(req: Recorded): unknown {
    const n = (req.body as { num_return_sequences?: number }).num_return_sequences ?? 1;
    return { completions: Array.from({ length: n }, (_, i) => `r${req.index}c${i}`) };
  },
};

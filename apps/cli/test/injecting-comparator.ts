// An OpenAI Chat Completions server on loopback whose answers try to inject HTML: n answers a
// request, every other one ` ${injection}`, the rest " e e". The browser tests point an API
// comparator at it, so hostile model text goes through a whole run into the pages people see.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface InjectingComparator {
  /** The chat completions endpoint, for comparator_api_url. */
  url: string;
  close: () => Promise<void>;
}

export async function startInjectingComparator(injection: string): Promise<InjectingComparator> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      const n = (JSON.parse(body) as { n: number }).n;
      const choices = Array.from({ length: n }, (_, i) => ({
        index: i,
        finish_reason: "stop",
        message: { role: "assistant", content: i % 2 === 0 ? ` ${injection}` : " e e" },
      }));
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ choices }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

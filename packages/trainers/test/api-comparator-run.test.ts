import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRoundFile } from "@pbrl/preference-data";
import { MADPOIterTrainer } from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

const KEY = "sk-run-SECRET-91c2e";
const KEY_ENV = "PBRL_TEST_COMPARATOR_KEY";

interface Received {
  method: string;
  url: string;
  authorization: string | undefined;
  body: { model: string; n: number; messages: { role: string; content: string }[]; max_tokens?: number; max_completion_tokens?: number };
}

/** Every file under dir, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe('MADPOIterTrainer with comparator_policy="api"', () => {
  let server: Server;
  let origin = "";
  const received: Received[] = [];
  beforeAll(async () => {
    // A healthy OpenAI Chat Completions server: n choices, each an answer full of the letter the reward counts.
    server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
      req.on("end", () => {
        const body = JSON.parse(raw) as Received["body"];
        received.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, body });
        const choices = Array.from({ length: body.n }, (_, i) => ({
          index: i,
          finish_reason: "stop",
          message: { role: "assistant", content: i % 2 === 0 ? " e e e e" : " no" },
        }));
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: "chatcmpl-test", object: "chat.completion", model: body.model, choices }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env[KEY_ENV] = KEY;
  });
  afterAll(async () => {
    delete process.env[KEY_ENV];
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("completes a run against a healthy OpenAI-format server, and no file the run writes nor any log line holds the key", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-api-run-"));
    const lines: string[] = [];
    const trainer = new MADPOIterTrainer({
      ...ITERATIVE_RUN,
      log: (line) => lines.push(line),
      args: {
        ...ITERATIVE_RUN.args,
        num_iterations: 2,
        comparator_policy: "api",
        comparator_history_k: null,
        comparator_api_format: "openai",
        comparator_api_url: `${origin}/v1/chat/completions`,
        comparator_api_model: "tiny-remote",
        comparator_api_key_env: KEY_ENV,
        comparator_api_max_concurrency: 2,
        output_dir: out,
      },
    });
    const r = await trainer.train();
    trainer.dispose();

    // On the wire: one Chat Completions request per item and agent per round, n = the candidate count, the key as a bearer token.
    const items = ITERATIVE_RUN.trainDataset.length;
    expect(received).toHaveLength(2 * items * 2);
    for (const q of received) {
      expect(q.method).toBe("POST");
      expect(q.url).toBe("/v1/chat/completions");
      expect(q.authorization).toBe(`Bearer ${KEY}`);
      expect(q.body.model).toBe("tiny-remote");
      expect(q.body.n).toBe(ITERATIVE_RUN.args.preference_num_candidates);
      expect(q.body.messages).toHaveLength(1);
      expect(q.body.messages[0]!.role).toBe("user");
    }
    expect(received.map((q) => q.body.messages[0]!.content)).toContain(ITERATIVE_RUN.trainDataset[0]!.prompt);

    // The remote answers became the comparator side of the pairs, and the agents trained on them.
    expect(r.rounds).toHaveLength(2);
    expect(r.rounds[0]!.pairs).toBeGreaterThan(0);
    expect(r.updates).toBeGreaterThan(0);
    const round1 = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    const texts = round1.pairs.flatMap((p) => [...p.winner_completions, ...p.loser_completions]);
    // " e e e e" is 8 tokens of the agents' tokenizer: held to max_new_tokens=6 like the agents' own answers
    expect(texts).toContain(" e e e");
    expect(texts).not.toContain(" e e e e");

    // The key: nowhere on disk, nowhere in the log.
    const files = filesUnder(out);
    expect(files.length).toBeGreaterThan(10);
    const leaking = files.filter((f) => readFileSync(f).includes(Buffer.from(KEY)));
    expect(leaking).toEqual([]);
    expect(lines.some((l) => l.includes("api"))).toBe(true);
    expect(lines.filter((l) => l.includes(KEY))).toEqual([]);
    expect(readFileSync(path.join(out, "config.json"), "utf8")).toContain(KEY_ENV);
  });
});

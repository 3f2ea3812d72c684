// `pbrl generate` and `pbrl score` give the transformers reference results on the fixtures.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./capture.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const FIXTURES = MODEL_FIXTURES;

interface Ref {
  greedy: { max_new_tokens: number; results: { text_prompt: string; input_ids: number[]; new_token_ids: number[]; text: string }[] };
  logprobs: {
    items: {
      prompt: string;
      completion: string;
      ends_with_eos: boolean;
      prompt_ids: number[];
      completion_ids: number[];
      token_logprobs: number[];
      sum: number;
    }[];
  };
}

describe.each(["tiny-llama", "tiny-qwen2"])("CLI probes on %s", (name) => {
  const ref = JSON.parse(readFileSync(path.join(FIXTURES, `${name}.reference.json`), "utf8")) as Ref;
  const dir = path.join(FIXTURES, name);

  it("pbrl generate --greedy --json reproduces the greedy tokens", async () => {
    for (const r of ref.greedy.results) {
      const { code, out, err } = await runCli([
        "generate",
        "--model",
        dir,
        "--prompt",
        r.text_prompt,
        "--greedy",
        "--max_new_tokens",
        String(ref.greedy.max_new_tokens),
        "--json",
      ]);
      expect(code, err).toBe(0);
      const json = JSON.parse(out) as { prompt_ids: number[]; results: { token_ids: number[]; text: string }[] };
      expect(json.prompt_ids).toEqual(r.input_ids);
      expect(json.results[0]!.token_ids).toEqual(r.new_token_ids);
      expect(json.results[0]!.text).toBe(r.text);
      expect(err).toMatch(/tensor backend: wasm/);
    }
  });

  it("pbrl score --json reproduces the sequence log-probs within 1e-4", async () => {
    for (const it of ref.logprobs.items) {
      const argv = ["score", "--model", dir, "--prompt", it.prompt, "--completion", it.completion, "--json", ...(it.ends_with_eos ? ["--add_eos"] : [])];
      const { code, out, err } = await runCli(argv);
      expect(code, err).toBe(0);
      const json = JSON.parse(out) as { prompt_ids: number[]; completion_ids: number[]; token_logprobs: number[]; sum: number };
      expect(json.prompt_ids).toEqual(it.prompt_ids);
      expect(json.completion_ids).toEqual(it.completion_ids);
      json.token_logprobs.forEach((lp, i) => expect(Math.abs(lp - it.token_logprobs[i]!)).toBeLessThanOrEqual(1e-4));
      expect(Math.abs(json.sum - it.sum)).toBeLessThanOrEqual(1e-4);
    }
  });
});

describe("CLI errors", () => {
  it("suggests the closest command and option, exit code 2", async () => {
    const a = await runCli(["gnerate"]);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/unknown command "gnerate" \(did you mean "generate"\?\)/);
    const b = await runCli(["generate", "--model", "x", "--prompt", "y", "--max_new_token", "3"]);
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/unknown option --max_new_token \(did you mean --max_new_tokens\?\)/);
    const c = await runCli(["generate", "--model", "x", "--prompt", "y", "--greedy", "--temperature", "0.7"]);
    expect(c.err).toMatch(/--greedy cannot be combined/);
    const d = await runCli(["generate", "--model", "x", "--prompt", "y", "--top_p", "1.5"]);
    expect(d.err).toMatch(/--top_p must be in \(0, 1\], got "1.5"/);
  });

  it("names a missing checkpoint folder clearly, exit code 2 (bad input)", async () => {
    const r = await runCli(["score", "--model", "/nonexistent/ckpt", "--prompt", "a", "--completion", "b"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/"\/nonexistent\/ckpt" is neither an existing folder nor a hub id/);
  });
});

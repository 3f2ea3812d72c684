// A text longer than the model's context, on native/wasm: the context length is the error, not a
// memory estimate for the too-long text that says "not enough memory" and suggests another backend.
import { describe, expect, it } from "vitest";
import { TINY_LLAMA } from "@pbrl/test-fixtures";
import { runCli } from "./capture.js";

// 56001 tokens with tiny-llama's tokenizer: a forward pass over them would need ~400 GB, far past
// the wasm heap, and 218 times the model's 256 positions.
const LONG = "hello world ".repeat(7000);

describe("a prompt longer than the model's context (max_position_embeddings 256)", () => {
  it("pbrl score: exit 2 with the context length, the prompt's tokens and the fix", async () => {
    const r = await runCli(["score", "--model", TINY_LLAMA, "--prompt", LONG, "--completion", "hi", "--backend", "wasm"]);
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err).not.toMatch(/memory|libtorch/);
    expect(r.err).toMatch(
      /pbrl score: the 56001-token prompt and 2-token completion are 56003 tokens, more than this model's max_position_embeddings \(256\); shorten the prompt to fewer than 256 tokens, leaving room for the completion\n$/,
    );
  });

  it("pbrl score: a prompt that fits with a completion that does not names how long the completion may be", async () => {
    const r = await runCli(["score", "--model", TINY_LLAMA, "--prompt", "hello", "--completion", LONG, "--backend", "wasm"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/more than this model's max_position_embeddings \(256\); shorten the completion to at most \d+ tokens, or the prompt\n$/);
  });

  it("pbrl generate: the same prompt names the context too", async () => {
    const r = await runCli(["generate", "--model", TINY_LLAMA, "--prompt", LONG, "--max_new_tokens", "4", "--backend", "wasm"]);
    expect(r.code).toBe(2);
    expect(r.err).not.toMatch(/memory|libtorch/);
    expect(r.err).toMatch(/after a 56001-token prompt needs 56005 positions, more than this model's max_position_embeddings \(256\); shorten the prompt/);
  });
});

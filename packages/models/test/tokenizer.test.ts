import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { Tokenizer } from "../src/index.js";
import { FIXTURES, reference } from "./reference.js";

describe.each(["tiny-llama", "tiny-qwen2"])("tokenizer of %s matches transformers", (name) => {
  const ref = reference(name);

  it("encodes with and without special tokens, and decodes", async () => {
    const tok = await Tokenizer.fromDir(path.join(FIXTURES, name));
    for (const t of ref.tokenizer) {
      expect(tok.encode(t.text)).toEqual(t.ids);
      expect(tok.encode(t.text, { addSpecialTokens: false })).toEqual(t.ids_no_special);
      expect(tok.decode(t.ids)).toBe(t.decoded);
      expect(tok.decode(t.ids, { skipSpecialTokens: false })).toBe(t.decoded_with_special);
    }
  });

  it("renders the chat template as apply_chat_template does", async () => {
    const tok = await Tokenizer.fromDir(path.join(FIXTURES, name));
    for (const c of ref.chat_template) {
      expect(tok.applyChatTemplate(c.messages, { addGenerationPrompt: c.add_generation_prompt })).toBe(c.rendered);
    }
  });
});

describe("tokenizer files", () => {
  it("finds the chat template in chat_template.jinja or in tokenizer_config.json", async () => {
    const llama = await Tokenizer.fromDir(path.join(FIXTURES, "tiny-llama"));
    const qwen = await Tokenizer.fromDir(path.join(FIXTURES, "tiny-qwen2"));
    expect(llama.files["chat_template.jinja"]).toBeUndefined();
    expect(llama.chatTemplate).toContain("<|assistant|>");
    expect(qwen.files["chat_template.jinja"]).toBeDefined();
    expect(qwen.chatTemplate).toContain("<|im_start|>");
  });

  it("knows its special token ids", async () => {
    const llama = await Tokenizer.fromDir(path.join(FIXTURES, "tiny-llama"));
    expect([llama.padTokenId, llama.bosTokenId, llama.eosTokenId]).toEqual([0, 1, 2]);
    const qwen = await Tokenizer.fromDir(path.join(FIXTURES, "tiny-qwen2"));
    expect(qwen.eosTokenId).toBe(381);
    expect(qwen.tokenToId("<|im_end|>")).toBe(383);
    expect(qwen.vocabSize).toBe(384);
  });

  it("fails clearly without tokenizer.json or a chat template", async () => {
    await expect(Tokenizer.fromDir(FIXTURES)).rejects.toThrow(/has no tokenizer\.json/);
    const tok = await Tokenizer.fromDir(path.join(FIXTURES, "tiny-llama"));
    const bare = new Tokenizer({ "tokenizer.json": tok.files["tokenizer.json"] });
    expect(() => bare.applyChatTemplate([{ role: "user", content: "hi" }])).toThrow(/no chat template/);
  });
});

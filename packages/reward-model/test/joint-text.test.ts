import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type Tokenizer } from "@pbrl/models";
import { encodeKeepEnd, JointRewardModel, jointText } from "../src/index.js";
import { TINY_LLAMA, TINY_QWEN2 } from "./helpers.js";

describe("jointText", () => {
  it("is CoMLRL's layout for two agents, literally", () => {
    expect(jointText(["<p1>", "<p2>"], ["<c1>", "<c2>"])).toBe(
      "Joint multi-agent response\n\nAgent 1 prompt:\n<p1>\n\nAgent 1 response:\n<c1>\n\nAgent 2 prompt:\n<p2>\n\nAgent 2 response:\n<c2>",
    );
  });

  it("numbers agents from 1, one agent for centralized text, missing entries empty", () => {
    expect(jointText(["joint prompt"], ["joint answer"])).toBe(
      "Joint multi-agent response\n\nAgent 1 prompt:\njoint prompt\n\nAgent 1 response:\njoint answer",
    );
    expect(jointText(["a", "b"], ["x"])).toBe(
      "Joint multi-agent response\n\nAgent 1 prompt:\na\n\nAgent 1 response:\nx\n\nAgent 2 prompt:\nb\n\nAgent 2 response:\n",
    );
    expect(jointText(["a"], ["x", "y"])).toBe(
      "Joint multi-agent response\n\nAgent 1 prompt:\na\n\nAgent 1 response:\nx\n\nAgent 2 prompt:\n\n\nAgent 2 response:\ny",
    );
  });
});

describe("truncation keeps the end of the text", () => {
  let llama: Tokenizer;
  let qwen: Tokenizer;
  beforeAll(async () => {
    const a = await loadPretrained(TINY_LLAMA);
    const b = await loadPretrained(TINY_QWEN2);
    llama = a.tokenizer!;
    qwen = b.tokenizer!;
    a.model.dispose();
    b.model.dispose();
  });

  const text = jointText(["Name a city.", "Describe it."], ["Zürich", "A calm city by a lake."]);

  it("keeps BOS and the last tokens (tiny-llama adds <s>)", () => {
    const full = llama.encode(text);
    const body = llama.encode(text, { addSpecialTokens: false });
    expect(full[0]).toBe(1);
    expect(encodeKeepEnd(llama, text, undefined)).toEqual(full);
    expect(encodeKeepEnd(llama, text, full.length)).toEqual(full);
    const cut = encodeKeepEnd(llama, text, 10);
    expect(cut).toEqual([1, ...body.slice(-9)]);
    expect(llama.decode(cut)).toMatch(/a lake\.$/);
    expect(() => encodeKeepEnd(llama, text, 1)).toThrow(/no room for text/);
  });

  it("a tokenizer without special tokens keeps just the last tokens (tiny-qwen2)", () => {
    const full = qwen.encode(text);
    expect(encodeKeepEnd(qwen, text, 7)).toEqual(full.slice(-7));
  });

  it("the model's default limit is the tokenizer's model_max_length", async () => {
    const rm = await JointRewardModel.create({ source: TINY_LLAMA, rng: RngStream.fromSeed(0, "head") });
    expect(rm.maxLength).toBe(256);
    const long = { prompts: ["word ".repeat(200), "x"], completions: ["y", "the end"] };
    const ids = rm.encode(long);
    expect(ids.length).toBe(256);
    expect(rm.tokenizer.decode(ids)).toMatch(/Agent 2 response:\nthe end$/);
    expect(rm.encode(long, 20).length).toBe(20);
    expect(() => rm.encode(long, 0)).toThrow(/maxLength must be an integer ≥ 1/);
    rm.dispose();
  });
  afterAll(() => undefined);
});

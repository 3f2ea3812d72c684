// Issue 19, chat prompts: a formatter (or the item's `prompt` field) may hold chat messages, TRL's
// conversational format. Each agent renders them with its own tokenizer's chat template
// (add_generation_prompt=true) and tokenizes the text as transformers' apply_chat_template does.
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { loadPretrained, Tokenizer, type Pretrained } from "@pbrl/models";
import {
  ChatTemplateError,
  collectComparisons,
  collectPreferencePairs,
  defaultFormatter,
  encodePrompt,
  encodePromptText,
  formatAgentPrompts,
  FormatterError,
  formatPrompts,
  pairTokensFromRecord,
  PolicySampler,
  renderPrompt,
  resolveFormatters,
  type CandidateSet,
  type ChatMessage,
  type Comparator,
  type Formatter,
  type GenerationSettings,
  type Policy,
  type RewardContext,
  type TaskItem,
} from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const MODELS = MODEL_FIXTURES;
const settings: GenerationSettings = { maxNewTokens: 4, temperature: 1.2, topP: 1, topK: null, maxBatchRows: 8 };
const user = (content: string): ChatMessage[] => [{ role: "user", content }];
const CAT = user("The cat");

// transformers 5.18.0, AutoTokenizer.from_pretrained(fixture).apply_chat_template([{"role": "user",
// "content": "The cat"}], add_generation_prompt=True, tokenize=True)["input_ids"]. Tiny Llama's
// template writes the BOS (id 1) itself, and its tokenizer adds one to plain text: one BOS, not two.
const TRANSFORMERS_IDS = {
  "tiny-llama": [1, 30, 94, 288, 270, 94, 32, 201, 201, 273, 269, 281, 2, 30, 94, 67, 85, 85, 282, 86, 67, 80, 86, 94, 32, 201, 201],
  "tiny-qwen2": [
    382, 82, 88, 82, 83, 68, 76, 198, 56, 78, 84, 259, 261, 259, 220, 257, 75, 79, 69, 84, 75, 259, 82, 82, 279, 83, 64, 77, 83, 13, 383, 198, 382, 285, 267,
    198, 270, 266, 278, 383, 198, 382, 64, 82, 82, 279, 83, 64, 77, 83, 198,
  ],
};

let llama: Pretrained;
let qwen: Pretrained;
let agents: Policy[];

beforeAll(async () => {
  llama = await loadPretrained(path.join(MODELS, "tiny-llama"));
  qwen = await loadPretrained(path.join(MODELS, "tiny-qwen2"));
  agents = [
    { model: llama.model, tokenizer: llama.tokenizer!, eosTokenIds: [2], padTokenId: 0 },
    { model: qwen.model, tokenizer: qwen.tokenizer!, eosTokenIds: [383], padTokenId: 381 },
  ];
});
afterAll(() => [llama, qwen].forEach((p) => p.model.dispose()));

/** Tiny Llama's tokenizer without any chat template. */
const bare = () => new Tokenizer({ "tokenizer.json": llama.tokenizer!.files["tokenizer.json"] });

const items: TaskItem[] = [
  { id: "a", prompt: CAT },
  {
    id: "b",
    prompt: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "We drink" },
    ],
  },
];

describe("a chat prompt", () => {
  it("is what the default formatter returns for a conversational item; the text-only formatPrompts refuses it clearly", () => {
    expect(defaultFormatter(items[0]!)).toEqual(CAT);
    expect(formatAgentPrompts(resolveFormatters(undefined, 2), items[1]!, 1)).toEqual([items[1]!["prompt"], items[1]!["prompt"]]);
    expect(() => formatPrompts([defaultFormatter], items[0]!, 0)).toThrow(
      /^the formatter of agent 0 returned chat messages for item 0 \(id "a"\), but this caller takes text prompts only/,
    );
  });

  it("is rendered with each agent's own template (add_generation_prompt) and tokenized as transformers does, without a second BOS", () => {
    for (const [name, tok] of [
      ["tiny-llama", llama.tokenizer!],
      ["tiny-qwen2", qwen.tokenizer!],
    ] as const) {
      const encoded = encodePrompt(tok, CAT, { agent: 0, itemIndex: 0 });
      expect(encoded.text).toBe(tok.applyChatTemplate(CAT, { addGenerationPrompt: true }));
      expect(encoded.ids).toEqual(TRANSFORMERS_IDS[name]);
      expect(renderPrompt(tok, CAT, { agent: 0, itemIndex: 0 })).toBe(encoded.text);
    }
    expect(encodePrompt(llama.tokenizer!, CAT, { agent: 0, itemIndex: 0 }).text).toBe("<s><|user|>\n\nThe cat</s><|assistant|>\n\n");
  });

  it("text prompts encode as before, except that a text already starting with the BOS (a template rendered by hand) gets no second one", () => {
    const tok = llama.tokenizer!;
    expect(encodePrompt(tok, "The cat", { agent: 0, itemIndex: 0 })).toEqual({ text: "The cat", ids: tok.encode("The cat") });
    const rendered = tok.applyChatTemplate(CAT, { addGenerationPrompt: true });
    expect(tok.encode(rendered).slice(0, 2)).toEqual([1, 1]);
    expect(encodePromptText(tok, rendered)).toEqual(TRANSFORMERS_IDS["tiny-llama"]);
    expect(encodePromptText(qwen.tokenizer!, "We drink")).toEqual(qwen.tokenizer!.encode("We drink"));
  });

  it("for a tokenizer without a chat template is a ChatTemplateError naming the agent, the item and the fix", () => {
    const err = (() => {
      try {
        encodePrompt(bare(), CAT, { agent: 1, itemIndex: 3, item: { id: "x", prompt: CAT } });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect(err).toBeInstanceOf(FormatterError);
    expect(err).toMatchObject({ agent: 1, itemIndex: 3 });
    expect((err as Error).message).toBe(
      "item 3 (id \"x\"): agent 1's prompt is a list of chat messages, but agent 1's tokenizer has no chat template (no chat_template.jinja, nor chat_template in tokenizer_config.json) to render it with; pass a formatter that returns the prompt as a string, or use a checkpoint whose tokenizer has a chat template",
    );
    // A text prompt needs no template.
    expect(encodePrompt(bare(), "The cat", { agent: 1, itemIndex: 3 }).ids).toEqual(llama.tokenizer!.encode("The cat"));
  });

  it("that the sampler meets for an agent without a template names the item it was sampling", () => {
    const sampler = new PolicySampler([agents[0]!, { ...agents[0]!, tokenizer: bare() }], settings, RngStream.fromSeed(0, "policy"));
    expect(() => sampler.sample([[CAT, CAT]], 1, [7])).toThrow(
      /^item 7: agent 1's prompt is a list of chat messages, but agent 1's tokenizer has no chat template/,
    );
  });

  it("whose messages are not {role, content} strings is a FormatterError saying which entry", () => {
    const multimodal = [{ role: "user", content: [{ type: "text", text: "hi" }] }];
    expect(() => formatAgentPrompts([defaultFormatter], { id: "m", prompt: multimodal }, 4)).toThrow(
      /^the formatter of agent 0 returned chat messages for item 4 \(id "m"\) that cannot be used: entry 0 \(role "user"\) has content \[.*\] \(an array\); only string content is supported; each message must be \{role: string, content: string\}$/,
    );
    expect(() => formatAgentPrompts([() => ["hi"] as unknown as ChatMessage[]], { id: "m" }, 0)).toThrow(/entry 0 is "hi" \(a string\), not a message object/);
  });
});

describe("an empty prompt", () => {
  const cases: [string, TaskItem][] = [
    ["an empty string", { id: "e", prompt: "" }],
    ["whitespace", { id: "e", prompt: "  \n" }],
    ["no messages", { id: "e", prompt: [] }],
    [
      "messages without content",
      {
        id: "e",
        prompt: [
          { role: "system", content: "" },
          { role: "user", content: " " },
        ],
      },
    ],
  ];
  it.each(cases)("(%s) is a FormatterError naming the item and the agent, not a run that trains on nothing", (_, item) => {
    expect(() => formatAgentPrompts(resolveFormatters(undefined, 2), item, 5)).toThrow(FormatterError);
    expect(() => formatAgentPrompts(resolveFormatters(undefined, 2), item, 5)).toThrow(
      /^agent 0's prompt for item 5 \(id "e"\) is empty: with no formatter the prompt is the item's "prompt" field/,
    );
    const own: Formatter = (x) => x["prompt"] as string;
    expect(() => formatAgentPrompts([defaultFormatter, own], { ...item, id: "f" }, 2, {})).toThrow(/^agent 0's prompt for item 2 \(id "f"\) is empty/);
    expect(() => formatAgentPrompts([() => "fine", own], item, 5)).toThrow(
      /^the formatter of agent 1 returned .*, an empty prompt, for item 5 \(id "e"\); it must return a non-empty prompt/,
    );
  });

  it("from an item without a prompt field says what the field holds and how to fix it", () => {
    expect(() => formatAgentPrompts([defaultFormatter], { id: "q", question: "Why?" }, 0)).toThrow(
      /^agent 0's prompt for item 0 \(id "q"\) is empty: with no formatter the prompt is the item's "prompt" field \(a string, or a list of chat messages \{role: string, content: string\}\), and this item's is undefined; give every item a non-empty "prompt", or pass formatters$/,
    );
  });

  it("stops a collection before anything is sampled", async () => {
    let sampled = false;
    const err = await collectPreferencePairs({
      items: [
        { id: "ok", prompt: CAT },
        { id: "e", prompt: [] },
      ],
      formatters: resolveFormatters(undefined, 2),
      sampler: { sample: () => ((sampled = true), []) },
      rewardFunc: () => [0],
      numCandidates: 1,
      pairSelection: "reward_gap",
      pairsPerSample: 1,
      selectionRng: RngStream.fromSeed(0, "sel"),
      rewardConcurrency: 1,
      itemsPerBatch: 2,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toMatch(/^agent 0's prompt for item 1 \(id "e"\) is empty/);
    expect(sampled).toBe(false);
  });
});

describe("collections with chat prompts", () => {
  /** The two agents' transformers ids and rendered text per item. */
  const expected = (item: TaskItem) => agents.map((ag) => encodePrompt(ag.tokenizer, item["prompt"] as ChatMessage[], { agent: 0, itemIndex: 0 }));

  it("the sampler generates from the chat ids and reports the rendered text", () => {
    const samples = new PolicySampler(agents, settings, RngStream.fromSeed(1, "policy")).sample([[CAT, CAT]], 2);
    expect(samples[0]!.map((s) => s.promptIds)).toEqual([TRANSFORMERS_IDS["tiny-llama"], TRANSFORMERS_IDS["tiny-qwen2"]]);
    expect(samples[0]!.map((s) => s.promptText)).toEqual(expected(items[0]!).map((e) => e.text));
  });

  it("pairs store, and rewards receive, each agent's rendered prompt text; the pairs train on the chat ids", async () => {
    const seen: RewardContext["prompts"][] = [];
    const r = await collectPreferencePairs({
      items,
      formatters: resolveFormatters(undefined, 2),
      sampler: new PolicySampler(agents, settings, RngStream.fromSeed(2, "policy")),
      rewardFunc: (c, ctx) => (seen.push(ctx.prompts), c[0]!.map((t, j) => t.length + 2 * c[1]![j]!.length)),
      numCandidates: 3,
      pairSelection: "reward_gap",
      pairsPerSample: 1,
      selectionRng: RngStream.fromSeed(0, "sel"),
      rewardConcurrency: 1,
      itemsPerBatch: 2,
    });
    expect(seen).toEqual(items.map((item) => expected(item).map((e) => e.text)));
    expect(r.pairs.length).toBeGreaterThan(0);
    for (const p of r.pairs) {
      const want = expected(items[p.itemIndex]!);
      expect(p.record.prompts).toEqual(want.map((e) => e.text));
      expect(p.record.prompts.every((t) => t.includes("<|") && t.length > 0)).toBe(true);
      expect(p.record.prompt_token_ids).toEqual(want.map((e) => e.ids));
      expect(p.tokens.map((t) => t.promptIds)).toEqual(want.map((e) => e.ids));
    }
  });

  it("iterative collection hands the comparator the rendered texts and stores them", async () => {
    const given: (readonly (readonly string[])[])[] = [];
    const comparator: Comparator = {
      description: "fixed",
      beginRound: async () => {},
      sample: async (_items, prompts, n): Promise<CandidateSet[]> => {
        given.push(prompts);
        return prompts.map((ps) => ({
          texts: ps.map(() => Array.from({ length: n }, (_, j) => "e".repeat(j + 1))),
          valid: Array.from({ length: n }, () => true),
        }));
      },
      endRound: async () => {},
      dispose: () => {},
    };
    const r = await collectComparisons({
      items: [items[1]!],
      formatters: resolveFormatters(undefined, 2),
      sampler: new PolicySampler(agents, settings, RngStream.fromSeed(3, "policy")),
      agents,
      comparator,
      comparatorNumCandidates: 2,
      rewardFunc: (c) => c[0]!.map((t, j) => t.length + c[1]![j]!.length),
      numCandidates: 2,
      pairSelection: "comparator_reward",
      pairsPerSample: null,
      selectionRng: RngStream.fromSeed(0, "sel"),
      rewardConcurrency: 1,
      itemsPerBatch: 1,
    });
    const want = expected(items[1]!);
    expect(given).toEqual([[want.map((e) => e.text)]]);
    expect(r.pairs.length).toBeGreaterThan(0);
    for (const p of r.pairs) {
      expect(p.record.prompts).toEqual(want.map((e) => e.text));
      expect(p.record.prompt_token_ids).toEqual(want.map((e) => e.ids));
    }
  });

  it("a stored pair without ids whose prompt is rendered chat text is re-encoded with one BOS", () => {
    const text = encodePrompt(llama.tokenizer!, CAT, { agent: 0, itemIndex: 0 }).text;
    const record = { prompts: [text], winner_completions: [" a"], loser_completions: [" b"], winner_reward: 1, loser_reward: 0, candidate_reward_mean: 0.5 };
    expect(pairTokensFromRecord(record, [{ tokenizer: llama.tokenizer!, eosTokenIds: [2] }])[0]!.promptIds).toEqual(TRANSFORMERS_IDS["tiny-llama"]);
  });
});

// Issue 19, chat prompts: a conversational dataset (TRL's `{"prompt": [{"role", "content"}]}`)
// with no formatter trains on each agent's chat-templated prompt, not on "".
//
// The expected ids come from transformers (CI has none, so the committed JSON is what CI checks).
// After changing chat-dataset.jsonl or a fixture tokenizer, regenerate them with:
//   .venv-ref/bin/python packages/trainers/test/fixtures/chat-template-ids.py
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { Tokenizer } from "@pbrl/models";
import { ChatTemplateError, FormatterError, readRoundFile, type ChatMessage, type TaskItem } from "@pbrl/preference-data";
import { MADPOIterTrainer, MARLHFIterTrainer } from "../src/index.js";
import { rolePromptText, taskSetup } from "../src/collaboration.js";
import { renderRunPrompts } from "../src/prompt-rendering.js";
import { runPromptTokens } from "../src/prompt-room.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const FIXTURES = path.join(import.meta.dirname, "fixtures");
const MODELS = MODEL_FIXTURES;
const CHECKPOINTS = ["tiny-llama", "tiny-qwen2"] as const;
const ITEMS: TaskItem[] = readFileSync(path.join(FIXTURES, "chat-dataset.jsonl"), "utf8")
  .split("\n")
  .filter((line) => line.trim() !== "")
  .map((line) => JSON.parse(line) as TaskItem);
const EXPECTED = JSON.parse(readFileSync(path.join(FIXTURES, "chat-expected-ids.json"), "utf8")) as {
  checkpoints: Record<(typeof CHECKPOINTS)[number], { id: string; text: string; ids: number[] }[]>;
};
/** transformers' rendered text and ids, `[agent][item]`: agent 0 is tiny-llama, agent 1 tiny-qwen2. */
const WANT = CHECKPOINTS.map((name) => EXPECTED.checkpoints[name]);

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-chat-"));
/** Renders every item's prompts for `task`, as a trainer does before a run. */
const renderTask = (task: Parameters<typeof renderRunPrompts>[0]["task"], tokenizers: Tokenizer[]) =>
  renderRunPrompts({
    task,
    tokenizers,
    limits: tokenizers.map(() => ({ maxPromptLength: null, maxNewTokens: 4, maxPositionEmbeddings: 256 })),
    datasets: [{ name: "train_dataset", items: ITEMS }],
    timeoutS: null,
  });
/** The total length of both answers: joint candidates rarely tie, so every round has pairs. */
const byLength = (c: string[][]) => c[0]!.map((a, j) => a.length + c[1]![j]!.length);

const ARGS = {
  num_agents: 2,
  num_iterations: 1,
  preference_num_candidates: 3,
  max_new_tokens: 4,
  temperature: 1.0,
  top_p: 1.0,
  comparator_policy: "current" as const,
  train_batch_size: 4,
  eval_interval: 0,
  agent_learning_rate: 1e-3,
  seed: 5,
  verbose: false,
};

describe("a MADPO-iter run on a conversational JSONL dataset", () => {
  it("trains on the chat-templated prompts: the round file's prompt ids are transformers' apply_chat_template ids, per agent", async () => {
    expect(WANT.map((rows) => rows.map((r) => r.id))).toEqual([ITEMS.map((i) => i["id"]), ITEMS.map((i) => i["id"])]);
    const out = tmp();
    const seen: (readonly string[])[] = [];
    const trainer = new MADPOIterTrainer({
      agents: CHECKPOINTS.map((name) => path.join(MODELS, name)),
      trainDataset: ITEMS,
      evalDataset: ITEMS.slice(0, 2),
      rewardFunc: (c, ctx) => (seen.push(ctx.prompts), byLength(c)),
      args: { ...ARGS, eval_interval: 1, eval_num_samples: 2, output_dir: out },
    });
    const r = await trainer.train();
    expect(r.rounds).toHaveLength(1);

    // The reward saw each agent's prompt as its chat template rendered it, never "".
    for (const prompts of seen) {
      const k = WANT[0]!.findIndex((row) => row.text === prompts[0]);
      expect(k).toBeGreaterThanOrEqual(0);
      expect(prompts).toEqual(WANT.map((rows) => rows[k]!.text));
    }
    const round = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    expect(round.pairs.length).toBeGreaterThan(0);
    const items = new Set<number>();
    for (const pair of round.pairs) {
      expect(pair.prompts.every((p) => p.trim() !== "")).toBe(true);
      const k = WANT[0]!.findIndex((row) => row.text === pair.prompts[0]);
      expect(k, `round-file prompt ${JSON.stringify(pair.prompts[0])} is not tiny-llama's rendering of any item`).toBeGreaterThanOrEqual(0);
      items.add(k);
      expect(pair.prompts).toEqual(WANT.map((rows) => rows[k]!.text));
      expect(pair.prompt_token_ids).toEqual(WANT.map((rows) => rows[k]!.ids));
    }
    expect(items.size).toBeGreaterThan(1);

    // Evaluation renders the same way.
    expect(r.evalAfter!.samples.map((s) => s.prompts)).toEqual([0, 1].map((k) => WANT.map((rows) => rows[k]!.text)));
    trainer.dispose();
  });

  it("with a checkpoint whose tokenizer has no chat template stops before writing anything: a ChatTemplateError naming the agent, the item and the fix", async () => {
    const bare = path.join(tmp(), "tiny-llama-no-template");
    cpSync(path.join(MODELS, "tiny-llama"), bare, { recursive: true });
    const config = JSON.parse(readFileSync(path.join(bare, "tokenizer_config.json"), "utf8")) as Record<string, unknown>;
    delete config["chat_template"];
    writeFileSync(path.join(bare, "tokenizer_config.json"), JSON.stringify(config));
    const out = path.join(tmp(), "run");
    const trainer = new MADPOIterTrainer({
      agents: [bare, path.join(MODELS, "tiny-qwen2")],
      trainDataset: ITEMS,
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: out },
    });
    const err = await trainer.train().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect(err).toMatchObject({ agent: 0, itemIndex: 0 });
    expect((err as Error).message).toMatch(
      /^train_dataset item 0 \(id "c0"\): agent 0's prompt is a list of chat messages, but agent 0's tokenizer has no chat template .*; pass a formatter that returns the prompt as a string, or use a checkpoint whose tokenizer has a chat template$/,
    );
    expect(existsSync(out)).toBe(false);
    trainer.dispose();
  });

  it("with an empty prompt stops before writing anything: a FormatterError naming the item and the agent", async () => {
    const out = path.join(tmp(), "run");
    const items = [...ITEMS, { id: "blank", prompt: [{ role: "user", content: "" }] }];
    const trainer = new MADPOIterTrainer({
      agents: CHECKPOINTS.map((name) => path.join(MODELS, name)),
      trainDataset: items,
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: out },
    });
    const err = await trainer.train().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toMatch(
      /^agent 0's prompt for train_dataset item 4 \(id "blank"\) is empty: with no formatter the prompt is the item's "prompt" field/,
    );
    expect(existsSync(out)).toBe(false);
    trainer.dispose();
  });
});

describe("chat prompts before a run", () => {
  it("the memory and context checks measure the chat-templated prompt in each agent's tokens", async () => {
    const tokenizers = await Promise.all(CHECKPOINTS.map((name) => Tokenizer.fromDir(path.join(MODELS, name))));
    const longest = Math.max(...WANT.flatMap((rows) => rows.map((r) => r.ids.length)));
    const task = taskSetup({
      collaborationMode: "decentralized",
      numAgents: 2,
      formatters: undefined,
      rewardFunc: () => [],
      adapter: undefined,
    });
    await renderTask(task, tokenizers);
    expect(runPromptTokens(task, ITEMS, { max_prompt_length: null })).toBe(longest);
    expect(runPromptTokens(task, ITEMS, { max_prompt_length: 3 })).toBe(3);
  });

  it("MARLHF-iter trains on the same chat-templated prompts: collection and the RL stage's rollouts", async () => {
    const out = tmp();
    const rewardPrompts: (readonly string[])[] = [];
    const trainer = new MARLHFIterTrainer({
      agents: CHECKPOINTS.map((name) => path.join(MODELS, name)),
      trainDataset: ITEMS,
      rewardFunc: (c, ctx) => (rewardPrompts.push(ctx.prompts), byLength(c)),
      args: { ...ARGS, output_dir: out, num_generations: 2, reward_train_batch_size: 2, reward_num_train_epochs: 1, logging_steps: 1 },
    });
    const r = await trainer.train();
    trainer.dispose();
    expect(r.updates).toBeGreaterThan(0);
    const round = await readRoundFile(path.join(out, "preference_replay", "iteration_0001.json"));
    for (const p of round.pairs) {
      const k = ITEMS.findIndex((i) => i["id"] === WANT[0]!.find((w) => w.text === p.prompts[0])?.id);
      expect(k, p.prompts[0]).toBeGreaterThanOrEqual(0);
      expect(p.prompt_token_ids).toEqual([WANT[0]![k]!.ids, WANT[1]![k]!.ids]);
    }
    // the task reward saw the rendered text; the RL stage (updates > 0) sampled from the rendered ids
    expect(rewardPrompts.length).toBeGreaterThan(0);
    expect(rewardPrompts.every((ps) => ps.every((t) => t.length > 0))).toBe(true);
  });

  it("centralized: role messages become text in the joint prompt, which is one user message for the actor's chat template", async () => {
    const roles = [(x: TaskItem) => x["prompt"] as ChatMessage[], (x: TaskItem) => [{ role: "user", content: `Continue: ${String(x["id"])}` }]];
    const prompts: (readonly string[])[] = [];
    const t = taskSetup({
      collaborationMode: "centralized",
      numAgents: 2,
      formatters: roles,
      rewardFunc: (c, ctx) => (prompts.push(ctx.prompts), c[0]!.map(() => 0)),
      adapter: undefined,
    });
    const joint = (await t.format(ITEMS[1]!, 1, {})).prompts[0];
    expect(joint).toEqual([
      {
        role: "user",
        content: expect.stringContaining("Agent 0 original prompt:\nsystem: Answer in one word.\n\nuser: We drink\n\nAgent 1 original prompt:\nContinue: c1"),
      },
    ]);
    await renderTask(t, [await Tokenizer.fromDir(path.join(MODELS, "tiny-llama"))]);
    await t.rewardFunc!([["<agent_0>a</agent_0><agent_1>b</agent_1>"]], { item: ITEMS[1]!, itemIndex: 1, prompts: [] });
    expect(prompts).toEqual([["system: Answer in one word.\n\nuser: We drink", "Continue: c1"]]);
    expect(rolePromptText("text")).toBe("text");
    // Text roles still make a text joint prompt.
    const text = taskSetup({
      collaborationMode: "centralized",
      numAgents: 2,
      formatters: [() => "a", () => "b"],
      rewardFunc: () => [],
      adapter: undefined,
    });
    expect(typeof (await text.format(ITEMS[0]!, 0, {})).prompts[0]).toBe("string");
  });
});

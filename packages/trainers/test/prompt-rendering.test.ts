// Issue 28, "Safe anywhere": every train and eval item's prompt is formatted and rendered once,
// before output_dir is touched, so no formatter or chat template runs in a round; a template that
// fails or loops on an eval item is a start-up error naming it, and a stuck one never holds this
// thread (chat-templates.test.ts: a template's process).
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ChatTemplateError, FormatterError, type TaskItem } from "@pbrl/preference-data";
import { MADPOIterTrainer } from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-render-"));
const byLength = (c: string[][]) => c[0]!.map((a, j) => a.length + c[1]![j]!.length);
const ARGS = {
  num_agents: 2,
  num_iterations: 2,
  preference_num_candidates: 3,
  max_new_tokens: 4,
  temperature: 1.0,
  comparator_policy: "current" as const,
  eval_interval: 1,
  eval_num_samples: 2,
  agent_learning_rate: 1e-3,
  seed: 3,
  verbose: false,
};
const chat = (content: string) => [{ role: "user", content }];
const TRAIN: TaskItem[] = ["The cat", "We drink", "A bird"].map((text, i) => ({ id: `t${i}`, prompt: chat(text) }));
const EVAL: TaskItem[] = [
  { id: "e0", prompt: chat("Snow falls") },
  { id: "e1", prompt: chat("bad weather") },
];

/** tiny-llama with its chat template replaced by `template` (its own, unless the first message holds "bad"). */
function modelWithTemplate(onBad: string): string {
  const dir = path.join(tmp(), "tiny-llama");
  cpSync(TINY_LLAMA, dir, { recursive: true });
  const file = path.join(dir, "tokenizer_config.json");
  const config = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  config["chat_template"] = `{% if 'bad' in messages[0]['content'] %}${onBad}{% endif %}${String(config["chat_template"])}`;
  writeFileSync(file, JSON.stringify(config));
  return dir;
}

describe("prompts rendered once, before the run", () => {
  it("each train and eval item is formatted once, whatever the rounds and evaluations; rounds read what was rendered", async () => {
    const calls: string[] = [];
    const formatter = (item: TaskItem) => (calls.push(String(item["id"])), `Answer: ${String(item["id"])}`);
    const trainer = new MADPOIterTrainer({
      agentModel: TINY_LLAMA,
      trainDataset: TRAIN,
      evalDataset: EVAL,
      formatters: [formatter, formatter],
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: path.join(tmp(), "run") },
    });
    const r = await trainer.train();
    trainer.dispose();
    expect(r.rounds).toHaveLength(2);
    expect(r.evalAfter?.samples.map((s) => s.prompts)).toEqual([
      ["Answer: e0", "Answer: e0"],
      ["Answer: e1", "Answer: e1"],
    ]);
    // 2 rounds × 3 items and 3 evaluations × 2 items used to call each agent's formatter 12 times.
    expect(calls.sort()).toEqual(["e0", "e0", "e1", "e1", "t0", "t0", "t1", "t1", "t2", "t2"]);
  });

  it("a chat template that fails on an eval item stops the run before output_dir is touched, naming the eval item and the agent", async () => {
    const out = path.join(tmp(), "run");
    const trainer = new MADPOIterTrainer({
      agentModel: modelWithTemplate("{{ raise_exception('no bad words') }}"),
      trainDataset: TRAIN,
      evalDataset: EVAL,
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: out },
    });
    const err = await trainer.train().catch((e: unknown) => e);
    trainer.dispose();
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect((err as Error).message).toMatch(/^eval_dataset item 1 \(id "e1"\): agent 0's chat template failed on the prompt's messages: no bad words; /);
    expect(existsSync(out)).toBe(false);
  });

  it("a chat template that loops on an eval item is stopped after reward_timeout_s, before output_dir is touched", async () => {
    const out = path.join(tmp(), "run");
    const trainer = new MADPOIterTrainer({
      agentModel: modelWithTemplate("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
      trainDataset: TRAIN,
      evalDataset: EVAL,
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: out, reward_timeout_s: 1 },
    });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    const start = Date.now();
    const err = await trainer.train().catch((e: unknown) => e);
    clearInterval(timer);
    trainer.dispose();
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect((err as Error).message).toMatch(
      /^eval_dataset item 1 \(id "e1"\): agent 0's chat template failed on the prompt's messages: it did not finish within reward_timeout_s=1 s, so its process was stopped/,
    );
    expect(existsSync(out)).toBe(false);
    expect(Date.now() - start).toBeLessThan(60_000);
    // This thread stayed free while the template looped.
    expect(ticks).toBeGreaterThan(10);
  });

  it("an asynchronous formatter that never settles is a FormatterError after reward_timeout_s naming the item", async () => {
    const out = path.join(tmp(), "run");
    const trainer = new MADPOIterTrainer({
      agentModel: TINY_LLAMA,
      trainDataset: TRAIN,
      evalDataset: EVAL,
      formatters: (item) => (item["id"] === "t1" ? new Promise<string>(() => {}) : Promise.resolve(`Answer: ${String(item["id"])}`)),
      rewardFunc: byLength,
      args: { ...ARGS, output_dir: out, reward_timeout_s: 0.5 },
    });
    const err = await trainer.train().catch((e: unknown) => e);
    trainer.dispose();
    expect(err).toBeInstanceOf(FormatterError);
    expect((err as Error).message).toBe(
      'the formatter of agent 0 did not finish on train_dataset item 1 (id "t1"): it did not return within reward_timeout_s=0.5 s; make it faster, or raise reward_timeout_s (null: no limit)',
    );
    expect(existsSync(out)).toBe(false);
  });
});

import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { Tokenizer } from "@pbrl/models";
import { CentralizedParseError, type CentralizedAdapter, type TaskItem } from "@pbrl/preference-data";
import { MADPOIterTrainer, MADPOTrainer } from "../src/index.js";
import { taskSetup } from "../src/collaboration.js";
import { renderRunPrompts } from "../src/prompt-rendering.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

const TINY = TINY_LLAMA;
const items: TaskItem[] = ["cats", "rivers", "snow", "bread"].map((topic, i) => ({ id: `t${i}`, topic }));
const roles = [(x: TaskItem) => `Left about ${String(x["topic"])}:`, (x: TaskItem) => `Right about ${String(x["topic"])}:`];

/** Splits a joint completion into two halves; completions of odd length (about half) are unparseable. */
const halves: CentralizedAdapter = {
  buildPrompt: (_item, prompts) => `JOINT ${prompts.join(" | ")}`,
  parseCompletion: (text) => {
    if (text.length % 2 === 1) throw new CentralizedParseError("no sections");
    const mid = Math.floor(text.length / 2);
    return [text.slice(0, mid), text.slice(mid)];
  },
};

describe("centralized collaboration: one actor writes every role", () => {
  it("builds the joint prompt, splits for the reward with the role prompts, flags unparseable completions", async () => {
    const seen: { roles: string[][]; prompts: readonly string[] }[] = [];
    const t = taskSetup({
      collaborationMode: "centralized",
      numAgents: 2,
      formatters: roles,
      rewardFunc: (c, ctx) => {
        seen.push({ roles: c, prompts: ctx.prompts });
        return c[0]!.map((a, j) => a.length + 2 * c[1]![j]!.length);
      },
      adapter: undefined,
    });
    expect(t.actors).toBe(1);
    expect(t.scoresWholeCompletion).toBe(true);
    const prompt = (await t.format(items[0]!, 0, {})).prompts[0] as string;
    expect(prompt).toContain("Agent 0 original prompt:\nLeft about cats:");
    expect(prompt).toContain("<agent_1>");
    // Rounds read the prompts rendered before the run: the actor's joint text, the roles' texts for the reward.
    const tokenizer = await Tokenizer.fromDir(TINY);
    const limits = { maxPromptLength: null, maxNewTokens: 8, maxPositionEmbeddings: 256 };
    await renderRunPrompts({ task: t, tokenizers: [tokenizer], limits: [limits], datasets: [{ name: "train_dataset", items }], timeoutS: null });
    expect(t.formatters[0]!(items[0]!)).toBe(prompt);
    const joint = ["<agent_0>ab</agent_0>\n<agent_1>xyz</agent_1>", "no tags at all"];
    const rewards = await t.rewardFunc!([joint], { item: items[0]!, itemIndex: 0, prompts: [prompt] });
    expect(seen[0]).toEqual({
      roles: [
        ["ab", ""],
        ["xyz", ""],
      ],
      prompts: ["Left about cats:", "Right about cats:"],
    });
    expect(rewards).toEqual([2 + 6, 0]);
    expect(t.isValid!([joint[0]!], items[0]!)).toBe(true);
    expect(t.isValid!([joint[1]!], items[0]!)).toBe(false);
    const plain = taskSetup({
      collaborationMode: "decentralized",
      numAgents: 2,
      formatters: roles,
      rewardFunc: () => [],
      adapter: undefined,
    });
    expect(plain).toMatchObject({ actors: 2, isValid: undefined, scoresWholeCompletion: false });
  });

  const args = (over: Record<string, unknown> = {}) => ({
    collaboration_mode: "centralized" as const,
    num_agents: 2,
    preference_num_candidates: 6,
    max_new_tokens: 8,
    temperature: 1.2,
    top_p: 1,
    num_train_epochs: 1,
    agent_learning_rate: 1e-3,
    eval_interval: 2,
    eval_num_samples: 2,
    verbose: false,
    output_dir: mkdtempSync(path.join(tmpdir(), "pbrl-collab-")),
    ...over,
  });
  const reward = (c: string[][]) => c[0]!.map((l, j) => (l + c[1]![j]!).split("e").length);

  it("MADPOTrainer trains the single actor on joint texts and never pairs an unparseable one", async () => {
    const t = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      evalDataset: items,
      formatters: roles,
      rewardFunc: reward,
      centralizedAdapter: halves,
      args: args(),
    });
    const [actor] = await t.agents();
    expect(await t.agents()).toHaveLength(1);
    const before = actor!.model.hostWeights().get("model.norm.weight")!.data.slice();
    const r = await t.train();
    expect(r.trained).toBe(true);
    expect(Array.from(actor!.model.hostWeights().get("model.norm.weight")!.data)).not.toEqual(Array.from(before));
    const pairs = JSON.parse(readFileSync(path.join(r.outputDir, "preference_pairs.json"), "utf8")) as {
      pairs: { prompts: string[]; winner_completions: string[]; loser_completions: string[] }[];
    };
    for (const p of pairs.pairs) {
      expect(p.prompts).toHaveLength(1);
      expect(p.prompts[0]).toMatch(/^JOINT Left about .* \| Right about .*:$/);
      expect(p.winner_completions[0]!.length % 2 === 1 || p.loser_completions[0]!.length % 2 === 1).toBe(false);
    }
    const collect = readFileSync(path.join(r.outputDir, "metrics.jsonl"), "utf8").split("\n")[0]!;
    expect(JSON.parse(collect)["preference/invalid_candidates"]).toBeGreaterThan(0);
    t.dispose();
  });

  it("MADPOIterTrainer: the comparator answers the joint prompt too", async () => {
    // A remote comparator on a loopback server shows what it is asked: it answers two texts the
    // halves adapter can split (even lengths), one full of the e's the reward counts.
    const asked: string[] = [];
    const server = createServer((req, res) => {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
      req.on("end", () => {
        const body = JSON.parse(raw) as { prompt: string; num_return_sequences: number };
        asked.push(body.prompt);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ completions: Array.from({ length: body.num_return_sequences }, (_, i) => (i % 2 === 0 ? "eeee" : "xx")) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/generate`;
    try {
      // comparator_generation_mode="centralized" is what a user of a centralized run may set: the one actor's joint prompt is still what the comparator answers
      const api = { comparator_policy: "api", comparator_api_format: "generic", comparator_api_url: url, comparator_generation_mode: "centralized" } as const;
      const t = new MADPOIterTrainer({
        agentModel: TINY,
        trainDataset: items,
        formatters: roles,
        rewardFunc: reward,
        centralizedAdapter: halves,
        args: { ...args(), num_iterations: 2, preference_num_candidates: 4, ...api },
      });
      const r = await t.train();
      t.dispose();
      expect(r.rounds).toHaveLength(2);
      // one request per item per round, each the joint prompt the actor answered
      expect(asked).toHaveLength(2 * items.length);
      for (const [k, prompt] of asked.entries())
        expect(prompt).toBe(`JOINT Left about ${String(items[k % items.length]!["topic"])}: | Right about ${String(items[k % items.length]!["topic"])}:`);
      const round = JSON.parse(readFileSync(path.join(r.outputDir, "preference_replay", "iteration_0001.json"), "utf8")) as {
        pairs: { prompts: string[]; winner_completions: string[]; loser_completions: string[] }[];
      };
      expect(round.pairs.length).toBeGreaterThan(0);
      for (const p of round.pairs) expect(p.prompts[0]).toMatch(/^JOINT /);
      // the comparator's joint answers are one side of the pairs
      expect(round.pairs.some((p) => ["eeee", "xx"].includes(p.winner_completions[0]!) || ["eeee", "xx"].includes(p.loser_completions[0]!))).toBe(true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("rejects more than one actor source", async () => {
    const t = new MADPOTrainer({ agents: [TINY, TINY], trainDataset: items, formatters: roles, rewardFunc: reward, args: args() });
    await expect(t.agents()).rejects.toThrow(/got 2 agent sources, but collaboration_mode="centralized" trains exactly one actor model/);
  });
});

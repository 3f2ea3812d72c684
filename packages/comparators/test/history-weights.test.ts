// HistoryWeights on its own: its checks and messages, which agents it loads, a LoRA agent's
// snapshot put onto the agent's own base, and what it frees. Real tiny checkpoints saved to a
// temporary folder.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { savePretrained } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
import { HistoryWeights } from "../src/history-weights.js";
import { loadAgent } from "./agents.js";

let tmp: string;
let agents: Policy[];
let lora: Policy;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-history-weights-"));
  agents = [await loadAgent(), await loadAgent()];
  for (const [i, a] of agents.entries()) await savePretrained(path.join(tmp, "full", `agent_${i}`), { model: a.model, tokenizer: a.tokenizer });
  const plain = await loadAgent();
  lora = { ...plain, model: plain.model.withLora({ r: 2, alpha: 4, dropout: 0, targetModules: undefined, useRslora: false }, RngStream.fromSeed(4, "lora")) };
  plain.model.dispose();
  // agent 0 a full checkpoint, agent 1 a LoRA adapter only (adapter_config.json, no config.json)
  await savePretrained(path.join(tmp, "mixed", "agent_0"), { model: agents[0]!.model, tokenizer: agents[0]!.tokenizer });
  await savePretrained(path.join(tmp, "mixed", "agent_1"), { model: lora.model, tokenizer: lora.tokenizer });
  // agent 0 a full checkpoint, agent 1 an adapter folder whose weights are missing
  await savePretrained(path.join(tmp, "broken", "agent_0"), { model: agents[0]!.model, tokenizer: agents[0]!.tokenizer });
  await mkdir(path.join(tmp, "broken", "agent_1"), { recursive: true });
  await writeFile(path.join(tmp, "broken", "agent_1", "adapter_config.json"), await readFile(path.join(tmp, "mixed", "agent_1", "adapter_config.json")));
  await mkdir(path.join(tmp, "half", "agent_0"), { recursive: true });
  await savePretrained(path.join(tmp, "half", "agent_1"), { model: agents[1]!.model, tokenizer: agents[1]!.tokenizer });
});
afterAll(async () => {
  [...agents, lora].forEach((a) => a.model.dispose());
  await rm(tmp, { recursive: true, force: true });
});

const at = (folder: string) => () => path.join(tmp, folder);

describe("HistoryWeights", () => {
  it("checks k and the agent indices, naming the value and what is accepted", () => {
    for (const k of [0, -1, 1.5]) {
      expect(() => new HistoryWeights({ k, weightsAt: at("full"), agents })).toThrow(new RangeError(`comparator_history_k: got ${k}; expected an integer ≥ 1`));
    }
    for (const i of [2, -1, 0.5]) {
      expect(() => new HistoryWeights({ k: 1, weightsAt: at("full"), agents, agentIndices: [0, i] })).toThrow(
        new RangeError(`history comparator: agent index ${i} is out of range; there are 2 agents`),
      );
    }
  });

  it("describes how many rounds back and maps each round to the one whose weights it uses", () => {
    expect(new HistoryWeights({ k: 1, weightsAt: at("full"), agents }).description).toBe("weights from 1 round back");
    const three = new HistoryWeights({ k: 3, weightsAt: at("full"), agents });
    expect(three.description).toBe("weights from 3 rounds back");
    expect([1, 2, 3, 4, 5, 6].map((r) => three.sourceRound(r))).toEqual([1, 1, 1, 1, 2, 3]);
  });

  it("refuses a round that is not an integer ≥ 1, and policies outside a round", async () => {
    const h = new HistoryWeights({ k: 1, weightsAt: at("full"), agents });
    for (const r of [0, 1.5]) await expect(h.beginRound(r)).rejects.toThrow(new RangeError(`history comparator: round must be an integer ≥ 1, got ${r}`));
    expect(() => h.policies()).toThrow(new Error("history comparator: sample() called outside a round; call beginRound first"));
  });

  it("names a single missing agent folder", async () => {
    const h = new HistoryWeights({ k: 2, weightsAt: at("half"), agents });
    const dir = path.join(tmp, "half");
    await expect(h.beginRound(4)).rejects.toThrow(
      new Error(`history comparator (round 4, k=2): the weights round 2 started from are incomplete; missing checkpoint folder: ${path.join(dir, "agent_0")}`),
    );
    // only the agents it serves are needed
    const one = new HistoryWeights({ k: 2, weightsAt: at("half"), agents, agentIndices: [1] });
    const before = liveTensorCount();
    await one.beginRound(4);
    const [p] = one.policies();
    expect(one.policies()).toHaveLength(1);
    expect(p!.model).not.toBe(agents[1]!.model);
    expect(p!.tokenizer).toBe(agents[1]!.tokenizer);
    expect(p!.sharesAgentVocabulary).toBe(true);
    await one.endRound();
    expect(liveTensorCount()).toBe(before);
    expect(() => one.policies()).toThrow(/call beginRound first/);
  });

  it("puts a LoRA agent's adapter snapshot onto the agent's base and loads full checkpoints apart; frees both", async () => {
    const mixed = [agents[0]!, lora];
    const h = new HistoryWeights({ k: 1, weightsAt: at("mixed"), agents: mixed });
    const before = liveTensorCount();
    await h.beginRound(2);
    const [full, adapter] = h.policies().map((p) => p.model);
    expect(full!.adapter).toBeUndefined();
    expect(full!.sharesBaseWith(agents[0]!.model)).toBe(false);
    expect(adapter!.adapter).toBeDefined();
    expect(adapter!.sharesBaseWith(lora.model)).toBe(true);
    expect(adapter).not.toBe(lora.model);
    const held = liveTensorCount();
    // a second beginRound frees the first round's models before loading again
    await h.beginRound(3);
    expect(liveTensorCount()).toBe(held);
    h.dispose();
    expect(liveTensorCount()).toBe(before);
    expect(lora.model.params.get("model.norm.weight")!.isDisposed).toBe(false);
  });

  it("frees the full checkpoints it loaded when a LoRA snapshot fails to load", async () => {
    const h = new HistoryWeights({ k: 1, weightsAt: at("broken"), agents: [agents[0]!, lora] });
    const before = liveTensorCount();
    const err = await h.beginRound(2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(path.join(tmp, "broken", "agent_1"));
    expect(liveTensorCount()).toBe(before);
    expect(() => h.policies()).toThrow(/call beginRound first/);
  });
});

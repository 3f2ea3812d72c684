import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import { PairRecordSchema, readPairsFile } from "@pbrl/preference-data";
import { MADPOConfig, MADPOTrainer } from "../src/index.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

function weights(models: CausalLM[]): Map<string, Float32Array>[] {
  return models.map((m) => new Map([...m.hostWeights()].map(([k, t]) => [k, t.data as Float32Array])));
}
const changed = (a: Map<string, Float32Array>, b: Map<string, Float32Array>) => [...a].some(([k, v]) => v.some((x, i) => x !== b.get(k)![i]));

describe("MADPOTrainer", () => {
  it("trains every agent, writes metrics, pairs and Hugging Face checkpoints", async () => {
    const trainer = new MADPOTrainer({ agentModel: TINY, trainDataset: items, evalDataset: items, rewardFunc: countE, args: small() });
    const agents = await trainer.agents();
    expect(agents).toHaveLength(2);
    expect(agents[0]!.model).not.toBe(agents[1]!.model);
    const before = weights(agents.map((a) => a.model));
    const r = await trainer.train();
    expect(r.trained).toBe(true);
    expect(r.numPairs).toBeGreaterThan(0);
    expect(r.updates).toBe(2 * Math.ceil(r.numPairs / 2));
    expect(r.envStep).toBe(2 * 2 * r.numPairs); // environment_steps_per_pair × pairs × epochs
    const after = weights(agents.map((a) => a.model));
    expect(changed(before[0]!, after[0]!)).toBe(true);
    expect(changed(before[1]!, after[1]!)).toBe(true);

    const dir = r.outputDir;
    const lines = readFileSync(path.join(dir, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number | string>);
    const train = lines.filter((l) => l["kind"] === "train");
    expect(train).toHaveLength(r.updates);
    for (const key of ["loss", "joint/margin", "joint/accuracy", "agent_0/margin", "agent_1/margin", "turn_1/reward_mean", "turn_1/expected_return"])
      expect(typeof train[0]![key]).toBe("number");
    const evals = lines.filter((l) => l["kind"] === "eval");
    expect(evals.length).toBe(Math.ceil(r.updates / 2) + 1); // before updates 0, 2, … and once after the last
    expect(evals[0]!["update"]).toBe(0);
    expect(typeof evals[0]!["eval/turn_1/reward_mean"]).toBe("number");
    expect(r.evalAfter!.samples).toHaveLength(3);

    const saved = await readPairsFile(path.join(dir, "preference_pairs.json"));
    expect(saved.num_pairs).toBe(r.numPairs);
    saved.pairs.forEach((p) => expect(PairRecordSchema.parse(p)).toEqual(p));
    expect(JSON.parse(readFileSync(path.join(dir, "config.json"), "utf8"))).toMatchObject({ trainer: "madpo", preference_num_candidates: 4 });
    for (const i of [0, 1]) {
      const back = await loadPretrained(path.join(dir, "agents", `agent_${i}`));
      expect(Array.from(back.model.hostWeights().get("model.norm.weight")!.data)).toEqual(Array.from(after[i]!.get("model.norm.weight")!));
      back.model.dispose();
    }
    trainer.dispose();
  });

  it("returns without touching the policies when no item yields a non-tied pair, and says so", async () => {
    const lines: string[] = [];
    const trainer = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: (c) => c[0]!.map(() => 1),
      args: small({ verbose: true }),
      log: (l) => lines.push(l),
    });
    const agents = await trainer.agents();
    const before = weights(agents.map((a) => a.model));
    const r = await trainer.train();
    expect(r).toMatchObject({ trained: false, numPairs: 0, updates: 0, envStep: 0 });
    const after = weights(agents.map((a) => a.model));
    expect(changed(before[0]!, after[0]!) || changed(before[1]!, after[1]!)).toBe(false);
    expect(lines.join("\n")).toMatch(/no item produced a non-tied preference pair; the policies were not updated/);
    expect(existsSync(path.join(r.outputDir, "agents"))).toBe(false);
    trainer.dispose();
  });

  it("is reproducible from the seed", async () => {
    const run = async (seed: number) => {
      const t = new MADPOTrainer({
        agentModel: TINY,
        trainDataset: items.slice(0, 3),
        rewardFunc: countE,
        args: small({ seed, num_train_epochs: 1, eval_interval: 0 }),
      });
      const r = await t.train();
      const pairs = await readPairsFile(path.join(r.outputDir, "preference_pairs.json"));
      const w = (await t.agents())[1]!.model.hostWeights().get("model.layers.0.mlp.up_proj.weight")!.data;
      t.dispose();
      return { pairs, w: Array.from(w) };
    };
    const a = await run(5);
    const b = await run(5);
    expect(b).toEqual(a);
    expect((await run(6)).pairs).not.toEqual(a.pairs);
  });

  it("stops on a bad reward with an error naming the item", async () => {
    const t = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: (c, ctx) => c[0]!.map(() => (ctx.itemIndex === 2 ? NaN : 1)),
      args: small(),
    });
    await expect(t.train()).rejects.toThrow(/reward_func returned NaN for candidate 0 of item 2 \(id "q2"\)/);
    t.dispose();
  });

  it("checks its inputs", () => {
    expect(
      () => new MADPOTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, formatters: [(i) => String(i["prompt"])], args: small() }),
    ).toThrow(/got 1 formatter\(s\) for num_agents=2/);
    expect(() => new MADPOTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: 3 as never })).toThrow(/rewardFunc must be a function/);
    expect(() => new MADPOTrainer({ agentModel: TINY, trainDataset: items, rewardFunc: countE, args: { dpo_beta: -1 } })).toThrow(/dpo_beta: got -1/);
    expect(MADPOConfig({ num_agents: 3 }).num_agents).toBe(3);
  });

  it("rejects a wrong number of agent sources", async () => {
    const t = new MADPOTrainer({ agents: [TINY], trainDataset: items, rewardFunc: countE, args: small() });
    await expect(t.agents()).rejects.toThrow(/agents: got 1 agent source\(s\) but num_agents=2/);
  });
});

import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { liveTensorCount } from "@pbrl/core-tensor";
import { loadPretrained } from "@pbrl/models";
import { JointRewardModel } from "@pbrl/reward-model";
import { MARLHFIterTrainer, MARLHFTrainer } from "../src/index.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-marlhf-"));
const readMetrics = (dir: string) =>
  readFileSync(path.join(dir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, number | string>);

/** The base run: the iterative test run's task, agents and sampling, collected once. */
const BASE = {
  agentModel: ITERATIVE_RUN.agentModel,
  trainDataset: ITERATIVE_RUN.trainDataset,
  evalDataset: ITERATIVE_RUN.evalDataset,
  rewardFunc: ITERATIVE_RUN.rewardFunc,
};
const BASE_ARGS = {
  preference_num_candidates: 4,
  max_new_tokens: 6,
  temperature: 1.0,
  top_p: 1.0,
  num_generations: 2,
  rollout_buffer_size: 3,
  train_batch_size: 3,
  num_train_epochs: 1,
  reward_learning_rate: 1e-3,
  reward_train_batch_size: 4,
  eval_interval: 2,
  eval_num_samples: 3,
  logging_steps: 1,
  agent_learning_rate: 1e-3,
  seed: 5,
  verbose: false,
};

describe("MARLHFTrainer", () => {
  it("collects pairs with the task reward, fits the reward model, runs RL against it, evaluates with the task reward, saves both", async () => {
    const out = tmp();
    const lines: string[] = [];
    const t = new MARLHFTrainer({ ...BASE, log: (l) => lines.push(l), args: { ...BASE_ARGS, rl_algorithm: "marloo", output_dir: out } });
    const before = (await t.agents())[0]!.model.hostWeights().get("model.norm.weight")!.data.slice();
    const r = await t.train();
    expect(r.trained).toBe(true);
    expect(r.numPairs).toBeGreaterThan(0);
    // 6 items in batches of 3: two RL updates, each 3 items × 2 generations joint evaluations
    expect(r.updates).toBe(2);
    expect(r.envStep).toBe(12);
    // Every evaluation scores the policies' answers with the task reward (integer counts of "e"),
    // never with the fitted reward model, and its metrics line is the mean of those rewards.
    const evals = [r.evalBefore!, r.evalAfter!];
    for (const e of evals) {
      expect(e.samples).toHaveLength(BASE_ARGS.eval_num_samples);
      for (const x of e.samples) expect(x.reward).toBe(BASE.rewardFunc([[x.completions[0]!], [x.completions[1]!]])[0]);
      expect(e["eval/turn_1/reward_mean"]).toBeCloseTo(e.samples.reduce((s, x) => s + x.reward, 0) / e.samples.length, 12);
    }
    const rmScores = t.fittedRewardModel!.scores(r.evalAfter!.samples.map((x) => ({ prompts: x.prompts, completions: x.completions })));
    expect(r.evalAfter!.samples.map((x) => x.reward)).not.toEqual(rmScores);
    const after = (await t.agents())[0]!.model.hostWeights().get("model.norm.weight")!.data;
    expect(Array.from(after)).not.toEqual(Array.from(before));

    const m = readMetrics(out);
    const reward = m.filter((x) => x.kind === "reward");
    expect(reward).toHaveLength(1);
    expect(reward[0]).toMatchObject({ "reward/epoch": 1, "reward/num_pairs": r.numPairs });
    for (const k of ["reward/loss", "reward/accuracy", "reward/margin"]) expect(Number.isFinite(reward[0]![k])).toBe(true);
    const train = m.filter((x) => x.kind === "train");
    expect(train).toHaveLength(2);
    for (const k of ["agent_0/loss", "agent_1/loss", "turn_1/reward_mean", "turn_1/expected_return"]) expect(Number.isFinite(train[0]![k])).toBe(true);
    const evalLines = m.filter((x) => x.kind === "eval");
    expect(evalLines.length).toBeGreaterThanOrEqual(2);
    expect(evalLines.at(-1)!["eval/turn_1/reward_mean"]).toBe(r.evalAfter!["eval/turn_1/reward_mean"]);
    expect(JSON.parse(readFileSync(path.join(out, "config.json"), "utf8"))).toMatchObject({
      trainer: "marlhf",
      rl_algorithm: "marloo",
      advantage_mode: "rloo",
    });

    // The saved reward model scores as the one the trainer used; the agents were saved too.
    const saved = await JointRewardModel.load(path.join(out, "reward_model"));
    const probe = [{ prompts: ["The cat", "The cat"], completions: [" e e", " no"] }];
    expect(saved.scores(probe)).toEqual(t.fittedRewardModel!.scores(probe));
    saved.dispose();
    expect(existsSync(path.join(out, "agents", "agent_1", "model.safetensors"))).toBe(true);
    expect(lines.some((l) => l.includes("reward model fitted"))).toBe(true);
    t.dispose();
  });

  it("returns without a reward model or an update when no item yields a non-tied pair", async () => {
    const out = tmp();
    const t = new MARLHFTrainer({ ...BASE, rewardFunc: (c: string[][]) => c[0]!.map(() => 1), args: { ...BASE_ARGS, output_dir: out } });
    const r = await t.train();
    expect(r).toMatchObject({ trained: false, numPairs: 0, updates: 0 });
    expect(t.fittedRewardModel).toBeUndefined();
    expect(existsSync(path.join(out, "reward_model"))).toBe(false);
    t.dispose();
  });

  it("model objects without reward_model_name: the error names reward_model_name", async () => {
    const loaded = await loadPretrained(ITERATIVE_RUN.agentModel);
    const t = new MARLHFTrainer({
      agents: [loaded.model, loaded.model.clone()],
      tokenizer: loaded.tokenizer!,
      trainDataset: BASE.trainDataset,
      rewardFunc: BASE.rewardFunc,
      args: { ...BASE_ARGS, eval_interval: 0, output_dir: tmp() },
    });
    await expect(t.train()).rejects.toThrow(/^reward_model_name: the agents are model objects/);
    t.dispose();
  });
});

describe("MARLHFIterTrainer", () => {
  it('preference_scoring_reward="reward_model": the task reward labels round 1, the latest reward model later rounds; round files say which; checkpoints hold it', async () => {
    const out = tmp();
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      args: { ...ITERATIVE_RUN.args, ...MARLHF_ITER_ARGS, num_iterations: 3, verbose: false, output_dir: out },
    });
    const tensors = liveTensorCount();
    const r = await t.train();
    expect(r.rounds).toHaveLength(3);
    const scorers = [1, 2, 3].map((i) => JSON.parse(readFileSync(path.join(out, "preference_replay", `iteration_000${i}.json`), "utf8")).scorer);
    expect(scorers).toEqual(["task", "reward_model", "reward_model"]);
    // a round labelled by the reward model holds reward-model scores, not task counts of "e"
    const round2 = JSON.parse(readFileSync(path.join(out, "preference_replay", "iteration_0002.json"), "utf8")) as { pairs: { winner_reward: number }[] };
    expect(round2.pairs.some((p) => !Number.isInteger(p.winner_reward))).toBe(true);
    for (const i of [1, 2, 3]) expect(existsSync(path.join(out, "checkpoints", `round_000${i}`, "reward_model", "reward_head.safetensors"))).toBe(true);
    expect(readMetrics(out).filter((x) => x.kind === "reward" && "reward/loss" in x)).toHaveLength(3);
    t.dispose();
    expect(liveTensorCount()).toBe(tensors);
  });

  it("with task scoring, the previous round's reward model is scored on the new pairs it never saw (reward/heldout_accuracy)", async () => {
    const out = tmp();
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      args: { ...ITERATIVE_RUN.args, ...MARLHF_ITER_ARGS, preference_scoring_reward: "task", num_iterations: 2, verbose: false, output_dir: out },
    });
    await t.train();
    const heldout = readMetrics(out).filter((x) => "reward/heldout_accuracy" in x);
    expect(heldout).toHaveLength(1);
    expect(heldout[0]!.round).toBe(2);
    expect(heldout[0]!["reward/heldout_accuracy"]).toBeGreaterThanOrEqual(0);
    expect(heldout[0]!["reward/heldout_pairs"]).toBeGreaterThan(0);
    const scorers = [1, 2].map((i) => JSON.parse(readFileSync(path.join(out, "preference_replay", `iteration_000${i}.json`), "utf8")).scorer);
    expect(scorers).toEqual(["task", "task"]);
    t.dispose();
  });
});

import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { liveTensorCount } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import { MADPOTrainer, MARLHFIterTrainer, MARLHFTrainer } from "../src/index.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-ac-"));
const trainLines = (dir: string) =>
  readFileSync(path.join(dir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, number | string>)
    .filter((x) => x.kind === "train");
const hashWeights = (m: CausalLM) => {
  const h = createHash("sha256");
  for (const [, t] of m.hostWeights()) h.update(Buffer.from(t.data.buffer));
  return h.digest("hex");
};

const run = (extra: Record<string, unknown>, out: string) =>
  new MARLHFIterTrainer({
    ...ITERATIVE_RUN,
    args: {
      ...ITERATIVE_RUN.args,
      ...MARLHF_ITER_ARGS,
      preference_scoring_reward: "task",
      num_iterations: 2,
      eval_interval: 0,
      verbose: false,
      output_dir: out,
      ...extra,
    },
  });

describe("MARLHFIterTrainer with actor-critic algorithms", () => {
  it.each([
    ["maac", { rl_algorithm: "maac" }, "critic/value_loss"],
    ["iac, separate critics", { rl_algorithm: "iac", use_separate_critic: true }, "agent_1/value_loss"],
    ["iac, value heads on the actors", { rl_algorithm: "iac", use_separate_critic: false, value_head_hidden_dim: 16 }, "agent_1/value_loss"],
  ])("%s runs end to end: fresh critics each round, value losses logged, nothing leaks", async (_name, extra, key) => {
    const out = tmp();
    const t = run(extra, out);
    const before = hashWeights((await t.agents())[0]!.model);
    const tensors = liveTensorCount();
    const r = await t.train();
    expect(r.updates).toBeGreaterThan(0);
    expect(hashWeights((await t.agents())[0]!.model)).not.toBe(before);
    const lines = trainLines(out);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(Number.isFinite(l[key])).toBe(true);
    // the critics of the last round are gone; only the latest reward model stays until dispose
    t.dispose();
    expect(liveTensorCount()).toBeLessThan(tensors);
  });

  it("reference KL: metrics in every train line; coefficient 0 trains exactly as KL disabled", async () => {
    const [off, zero, on] = [tmp(), tmp(), tmp()];
    const weights: string[] = [];
    for (const [out, extra] of [
      [off, { reference_kl_enabled: false }],
      [zero, { reference_kl_enabled: true, reference_kl_coef: 0 }],
      [on, { reference_kl_enabled: true, reference_kl_coef: 0.5 }],
    ] as const) {
      const t = run(extra, out);
      await t.train();
      weights.push(hashWeights((await t.agents())[1]!.model));
      t.dispose();
    }
    expect(weights[1]).toBe(weights[0]);
    expect(weights[2]).not.toBe(weights[0]);
    for (const l of trainLines(on)) {
      expect(Number.isFinite(l["turn_1/reference_kl_mean"])).toBe(true);
      expect(l["turn_1/reference_kl_penalty_mean"]).toBeCloseTo(0.5 * (l["turn_1/reference_kl_mean"] as number), 6);
    }
    expect(trainLines(off).every((l) => !("turn_1/reference_kl_mean" in l))).toBe(true);
  });

  it("the reference KL never changes MADPO's loss: reference_kl_enabled leaves MADPO's training identical", async () => {
    const hashes: string[] = [];
    for (const enabled of [false, true]) {
      const t = new MADPOTrainer({
        agentModel: ITERATIVE_RUN.agentModel,
        trainDataset: ITERATIVE_RUN.trainDataset,
        rewardFunc: ITERATIVE_RUN.rewardFunc,
        args: {
          preference_num_candidates: 4,
          max_new_tokens: 6,
          train_batch_size: 4,
          eval_interval: 0,
          seed: 3,
          verbose: false,
          reference_kl_enabled: enabled,
          reference_kl_coef: 5,
          output_dir: tmp(),
        },
      });
      const r = await t.train();
      expect(r.updates).toBeGreaterThan(0);
      hashes.push(hashWeights((await t.agents())[0]!.model));
      t.dispose();
    }
    expect(hashes[1]).toBe(hashes[0]);
  });
});

describe("actor-critic sources", () => {
  const base = { ...ITERATIVE_RUN.args, ...MARLHF_ITER_ARGS, eval_interval: 0, verbose: false };
  it("maac with model-object agents and no critic source: the error names critic_model_name", async () => {
    const loaded = await loadPretrained(ITERATIVE_RUN.agentModel);
    const t = new MARLHFTrainer({
      agents: [loaded.model, loaded.model.clone()],
      tokenizer: loaded.tokenizer!,
      trainDataset: ITERATIVE_RUN.trainDataset,
      rewardFunc: ITERATIVE_RUN.rewardFunc,
      args: {
        preference_num_candidates: 4,
        max_new_tokens: 6,
        num_generations: 2,
        rl_algorithm: "maac",
        reward_model_name: ITERATIVE_RUN.agentModel,
        eval_interval: 0,
        verbose: false,
        seed: 5,
        output_dir: tmp(),
      },
    });
    await expect(t.train()).rejects.toThrow(/^critic_model_name: rl_algorithm=maac needs a critic source/);
    t.dispose();
  });

  it("iac with value heads on the actors refuses a critic source, naming both fields", async () => {
    const t = run({ rl_algorithm: "iac", use_separate_critic: false, critic_model_name: ITERATIVE_RUN.agentModel }, tmp());
    await expect(t.train()).rejects.toThrow(/use_separate_critic=false .*critic_model_name must not be given/);
    t.dispose();
  });

  it("maac with two critics is ambiguous: the error names critics", async () => {
    const t = new MARLHFIterTrainer({
      ...ITERATIVE_RUN,
      critics: [ITERATIVE_RUN.agentModel, ITERATIVE_RUN.agentModel],
      args: { ...base, rl_algorithm: "maac", output_dir: tmp() },
    });
    await expect(t.train()).rejects.toThrow(/^critics: MAAC trains one centralized critic/);
    t.dispose();
  });

  it("bad actor-critic fields fail at construction, naming the field", () => {
    expect(() => new MARLHFIterTrainer({ ...ITERATIVE_RUN, args: { ...base, rl_algorithm: "iac", value_head_hidden_dim: 0 } })).toThrow(
      /value_head_hidden_dim/,
    );
  });
});

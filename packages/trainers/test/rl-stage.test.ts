// MARLHF's RL stage follows CoMLRL's MAGRPO loop: an update per full rollout buffer, in shuffled
// mini-batches of train_batch_size, the rest drained at every epoch's end; evaluation before the
// items whose position within the epoch is a multiple of eval_interval, at that item's env_step.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { MARLHFTrainer } from "../src/index.js";
import { evaluationSteps } from "../src/policy-learning.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";

describe("evaluationSteps (CoMLRL's schedule, hand-computed)", () => {
  it("one step per item whose position in the epoch is a multiple of eval_interval, num_generations env steps apart", () => {
    expect(evaluationSteps({ firstItem: 0, items: 4 }, 3, 0, 2)).toEqual([0, 6]);
    expect(evaluationSteps({ firstItem: 4, items: 2 }, 3, 8, 2)).toEqual([]);
    expect(evaluationSteps({ firstItem: 4, items: 3 }, 2, 8, 2)).toEqual([8, 12]);
    expect(evaluationSteps({ firstItem: 0, items: 5 }, 1, 10, 4)).toEqual([10, 14, 18, 22, 26]);
    expect(evaluationSteps({ firstItem: 0, items: 4 }, 0, 0, 2)).toEqual([]);
  });
});

describe("MARLHF's RL stage", () => {
  it("updates per rollout buffer in mini-batches and evaluates on CoMLRL's item schedule", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-rl-stage-"));
    const t = new MARLHFTrainer({
      agentModel: ITERATIVE_RUN.agentModel,
      trainDataset: ITERATIVE_RUN.trainDataset,
      evalDataset: ITERATIVE_RUN.evalDataset,
      rewardFunc: ITERATIVE_RUN.rewardFunc,
      args: {
        preference_num_candidates: 4,
        max_new_tokens: 6,
        temperature: 1,
        top_p: 1,
        num_generations: 2,
        rollout_buffer_size: 4,
        train_batch_size: 2,
        num_train_epochs: 2,
        reward_train_batch_size: 4,
        eval_interval: 3,
        eval_num_samples: 2,
        logging_steps: 1,
        agent_learning_rate: 1e-3,
        seed: 5,
        verbose: false,
        output_dir: out,
      },
    });
    const r = await t.train();
    t.dispose();
    const m = readFileSync(path.join(out, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, number | string>);
    // 6 items an epoch: a buffer of 4 (2 mini-batches), then 2 drained (1); 2 joint evaluations per item
    const train = m.filter((x) => x.kind === "train");
    expect(train.map((x) => [x["epoch"], x["step"], x["rl/updates"], x["update"]])).toEqual([
      [1, 8, 2, 2],
      [1, 12, 1, 3],
      [2, 20, 2, 5],
      [2, 24, 1, 6],
    ]);
    expect([r.updates, r.envStep]).toEqual([6, 24]);
    // before items 0 and 3 of each epoch (env steps 0, 6 and 12, 18), then the final evaluation
    expect(m.filter((x) => x.kind === "eval").map((x) => [x["step"], x["update"]])).toEqual([
      [0, 0],
      [6, 0],
      [12, 3],
      [18, 3],
      [24, 6],
    ]);
  });
});

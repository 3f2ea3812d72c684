// What every trainer exposes besides train(): evaluate() with the task reward and saveModel() as
// Hugging Face checkpoints, the iterative trainers as the base ones.
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import { MADPOIterTrainer, MADPOTrainer, MARLHFIterTrainer } from "../src/index.js";
import { ITERATIVE_RUN, MARLHF_ITER_ARGS } from "./child/iterative-run-config.js";

const tmp = () => mkdtempSync(path.join(tmpdir(), "pbrl-api-"));
const hash = (m: CausalLM) => {
  const h = createHash("sha256");
  for (const [, t] of m.hostWeights()) h.update(Buffer.from(t.data.buffer));
  return h.digest("hex");
};

describe("evaluate() and saveModel() on the iterative trainers", () => {
  it.each([
    [
      "MADPOIterTrainer",
      () => new MADPOIterTrainer({ ...ITERATIVE_RUN, args: { ...ITERATIVE_RUN.args, num_iterations: 1, verbose: false, output_dir: tmp() } }),
    ],
    [
      "MARLHFIterTrainer",
      () =>
        new MARLHFIterTrainer({ ...ITERATIVE_RUN, args: { ...ITERATIVE_RUN.args, ...MARLHF_ITER_ARGS, num_iterations: 1, verbose: false, output_dir: tmp() } }),
    ],
  ])(
    "%s: evaluate() samples the agents and scores them with the task reward, exactly as the base trainer does; saveModel() writes loadable checkpoints",
    async (_name, make) => {
      const t = make();
      // the base trainer with the same agents, seed and sampling settings evaluates the same way
      const base = new MADPOTrainer({
        ...ITERATIVE_RUN,
        args: { seed: ITERATIVE_RUN.args.seed, max_new_tokens: 6, temperature: 1, top_p: 1, eval_num_samples: 3, verbose: false, output_dir: tmp() },
      });
      const r = (await t.evaluate())!;
      expect(r).toEqual(await base.evaluate());
      expect(r.samples).toHaveLength(3);
      for (const x of r.samples) expect(x.reward).toBe(ITERATIVE_RUN.rewardFunc([[x.completions[0]!], [x.completions[1]!]])[0]);

      // after training, saveModel writes the trained agents, which load with the same weights
      await t.train();
      const dir = tmp();
      await t.saveModel(dir);
      const agents = await t.agents();
      for (const i of [0, 1]) {
        const saved = await loadPretrained(path.join(dir, `agent_${i}`));
        expect(hash(saved.model)).toBe(hash(agents[i]!.model));
        saved.model.dispose();
      }
      expect(hash(agents[0]!.model)).not.toBe(hash((await base.agents())[0]!.model));
      t.dispose();
      base.dispose();
    },
  );
});

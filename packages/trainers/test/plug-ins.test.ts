import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createComparator } from "@pbrl/comparators";
import { describe, expect, it } from "vitest";
import {
  MADPOIterTrainer,
  MADPOTrainer,
  type Comparator,
  type ComparatorContext,
  type ComparatorFactory,
  type ResolvedAgent,
  type TrainerCallback,
} from "../src/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { countE, items, small, TINY } from "./small-madpo-run.js";

/** A factory that builds the built-in "current" comparator from the run's live agents, named, counting its samples. */
function countingFactory(): { factory: ComparatorFactory; contexts: ComparatorContext[]; samples: () => number } {
  const contexts: ComparatorContext[] = [];
  let samples = 0;
  const factory: ComparatorFactory = (ctx) => {
    contexts.push(ctx);
    const inner = createComparator({ policy: "current", agents: ctx.agents, generation: ctx.generation, rng: ctx.rng });
    const comparator: Comparator = {
      name: "echo-current",
      description: "the agents' own samples, counted",
      beginRound: (round) => inner.beginRound(round),
      sample: (items, prompts, n) => {
        samples += 1;
        return inner.sample(items, prompts, n);
      },
      endRound: () => inner.endRound(),
      dispose: () => inner.dispose(),
    };
    return comparator;
  };
  return { factory, contexts, samples: () => samples };
}

describe("plug-ins and callbacks", () => {
  it("a comparator factory gets the live agents and is used and recorded; a callback stops after round 1 with a resumable checkpoint; log gets progress lines", async () => {
    const out = mkdtempSync(path.join(tmpdir(), "pbrl-plugins-"));
    const { factory, contexts, samples } = countingFactory();
    const lines: string[] = [];
    const events: string[] = [];
    const stopAfterRound1: TrainerCallback = {
      onTrainBegin: (s) => void events.push(`begin ${s.round}/${s.numRounds}`),
      onRoundBegin: (s) => void events.push(`round ${s.round}`),
      onLog: (_s, _c, record) => void events.push(`log ${record.kind}`),
      onSave: (s, _c, dir) => void events.push(`save ${s.round} ${path.basename(dir)}`),
      onRoundEnd: (s, control, summary) => {
        events.push(`end ${summary.round}`);
        if (s.round === 1) control.shouldTrainingStop = true;
      },
      onTrainEnd: () => void events.push("train end"),
    };
    const args = { ...ITERATIVE_RUN.args, num_iterations: 2, eval_interval: 0, log_reward_distribution: false, output_dir: out };
    const t = new MADPOIterTrainer({ ...ITERATIVE_RUN, comparator: factory, callbacks: [stopAfterRound1], log: (l) => lines.push(l), args });
    const r = await t.train();
    const agents: ResolvedAgent[] = await t.agents();
    t.dispose();

    // the factory saw the run's own agents (the ones training changes), their tokenizers and the sampling settings
    expect(contexts).toHaveLength(1);
    expect(contexts[0]!.agents).toEqual(agents);
    contexts[0]!.agents.forEach((ag, i) => expect(ag.model).toBe(agents[i]!.model));
    expect(contexts[0]!.tokenizers).toEqual(agents.map((ag) => ag.tokenizer));
    expect(contexts[0]!.generation).toMatchObject({ maxNewTokens: 6, temperature: 1.0 });
    expect(samples()).toBeGreaterThan(0);

    const config = JSON.parse(readFileSync(path.join(out, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config["comparator_policy"]).toBe("custom");
    expect(config["custom_comparator"]).toEqual({ name: "echo-current", description: "the agents' own samples, counted" });
    expect(config["preference_replay_mode"]).toBe("lambda_decay");
    expect(lines).toContain("pbrl: 2 rounds against custom comparator echo-current (the agents' own samples, counted), replay lambda_decay");

    expect(r.stopped).toBe(true);
    expect(r.rounds.map((s) => s.round)).toEqual([1]);
    expect(lines).toContain("pbrl: stopped after round 1 (a callback set control.shouldTrainingStop); resume with resume_from_checkpoint=true");
    expect(existsSync(path.join(out, "checkpoints", "round_0001", "state.json"))).toBe(true);
    expect(existsSync(path.join(out, "agents"))).toBe(false);
    const order = events.filter((e) => !e.startsWith("log "));
    expect(order).toEqual(["begin 0/2", "round 1", "save 1 round_0001", "end 1", "train end"]);
    expect(events).toContain("log round");

    // progress went through the log option as plain lines, never to stderr as a bar
    expect(lines.some((l) => /^round 1\/2 collection: \d+\/6 \(/.test(l))).toBe(true);

    const again = countingFactory();
    const resumed = new MADPOIterTrainer({ ...ITERATIVE_RUN, comparator: again.factory, log: () => {}, args: { ...args, resume_from_checkpoint: true } });
    const r2 = await resumed.train();
    resumed.dispose();
    expect(r2.resumedAfterRound).toBe(1);
    expect(r2.stopped).toBe(false);
    expect(r2.rounds.map((s) => s.round)).toEqual([2]);
    expect(existsSync(path.join(out, "agents", "agent_0"))).toBe(true);
  });

  it("a callback stops a base trainer after collection: the pairs are written, the policies untouched", async () => {
    const events: string[] = [];
    const trainer = new MADPOTrainer({
      agentModel: TINY,
      trainDataset: items,
      rewardFunc: countE,
      log: () => {},
      callbacks: [
        {
          onTrainBegin: (s, control) => {
            events.push(`begin ${s.trainer}`);
            control.shouldTrainingStop = true;
          },
          onLog: (_s, _c, record) => void events.push(`log ${record.kind}`),
          onTrainEnd: (s) => void events.push(`end ${s.updates}`),
        },
      ],
      args: small(),
    });
    const r = await trainer.train();
    trainer.dispose();
    expect(r).toMatchObject({ stopped: true, trained: false, updates: 0 });
    expect(r.numPairs).toBeGreaterThan(0);
    expect(existsSync(path.join(r.outputDir, "preference_pairs.json"))).toBe(true);
    expect(existsSync(path.join(r.outputDir, "agents"))).toBe(false);
    expect(events).toEqual(["begin madpo", "log collect", "end 0"]);
  });
});

import { mkdtemp, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveTensorCount, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, savePretrained } from "@pbrl/models";
import { PolicySampler, type Policy } from "@pbrl/preference-data";
import { HistoryComparator } from "../src/index.js";
import { GEN, ITEMS, LLAMA, perturb, PROMPTS, QWEN } from "./agents.js";

let tmp: string;
/** weights[r - 1][agent]: what round r started from (round 1: the fixtures), kept in memory to sample directly. */
const weights: Policy[][] = [];
const roundDir = (r: number) => path.join(tmp, `round_${r}`);

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "pbrl-history-"));
  for (let r = 1; r <= 4; r++) {
    const perAgent: Policy[] = [];
    for (const [i, dir] of [LLAMA, QWEN].entries()) {
      const p = await loadPretrained(dir);
      if (r > 1) perturb(p.model, 1000 * r + i);
      await savePretrained(path.join(roundDir(r), `agent_${i}`), p);
      perAgent.push({ model: p.model, tokenizer: p.tokenizer!, eosTokenIds: p.generation.eosTokenIds, padTokenId: p.generation.padTokenId ?? 0 });
    }
    weights.push(perAgent);
  }
});
afterAll(async () => {
  weights.flat().forEach((p) => p.model.dispose());
  await rm(tmp, { recursive: true, force: true });
});

const tokensOf = (samples: ReturnType<PolicySampler["sample"]>) => samples.map((item) => item.map((a) => a.tokens));

describe("HistoryComparator", () => {
  for (const [k, expectedSources] of [
    [1, [1, 1, 2, 3]],
    [2, [1, 1, 1, 2]],
  ] as const) {
    it(`k=${k}: round t samples exactly the weights round t-${k} started from, loaded once per round`, async () => {
      const agents = weights[0]!; // the live agents; their tokenizers go with the loaded weights
      const calls: number[] = [];
      const rng = RngStream.fromSeed(21, "comparator");
      const comparator = new HistoryComparator({
        agents,
        generation: GEN,
        rng,
        k,
        weightsAt: (round) => {
          calls.push(round);
          return roundDir(round);
        },
      });
      expect(comparator.description).toBe(`history (k=${k})`);
      const before = liveTensorCount();
      for (let t = 1; t <= 4; t++) {
        await comparator.beginRound(t);
        const state = rng.getState();
        // two sample calls in one round (two item batches): still one load
        const sets = [
          ...(await comparator.sample(ITEMS.slice(0, 1), PROMPTS.slice(0, 1), 3)),
          ...(await comparator.sample(ITEMS.slice(1), PROMPTS.slice(1), 3)),
        ];
        await comparator.endRound();
        expect(liveTensorCount()).toBe(before);

        const source = expectedSources[t - 1]!;
        const twin = RngStream.fromState(state);
        const sampler = new PolicySampler(weights[source - 1]!, GEN, twin);
        const direct = [...sampler.sample(PROMPTS.slice(0, 1), 3), ...sampler.sample(PROMPTS.slice(1), 3)];
        expect(sets.map((s) => s.tokens)).toEqual(tokensOf(direct));
        expect(sets.map((s) => s.texts)).toEqual(direct.map((item) => item.map((a) => a.texts)));
        if (source !== t) {
          // not the weights the round itself started from (CoMLRL's off-by-one would give those for k=1)
          const own = new PolicySampler(weights[t - 1]!, GEN, RngStream.fromState(state));
          expect(sets.map((s) => s.tokens)).not.toEqual(tokensOf([...own.sample(PROMPTS.slice(0, 1), 3), ...own.sample(PROMPTS.slice(1), 3)]));
        }
      }
      expect(calls).toEqual(expectedSources);
      comparator.dispose();
      expect(liveTensorCount()).toBe(before);
    });
  }

  it("names every missing agent folder and loads nothing", async () => {
    const empty = await mkdtemp(path.join(tmp, "empty-"));
    const comparator = new HistoryComparator({ agents: weights[0]!, generation: GEN, rng: RngStream.fromSeed(1), k: 1, weightsAt: () => empty });
    const before = liveTensorCount();
    await expect(comparator.beginRound(3)).rejects.toThrow(
      new RegExp(`round 3, k=1.*round 2 started from.*missing checkpoint folders: ${empty}/agent_0, ${empty}/agent_1`),
    );
    expect(liveTensorCount()).toBe(before);
    await expect(comparator.sample(ITEMS, PROMPTS, 1)).rejects.toThrow(/call beginRound first/);
    expect(() => new HistoryComparator({ agents: weights[0]!, generation: GEN, rng: RngStream.fromSeed(1), k: 0, weightsAt: () => empty })).toThrow(
      /comparator_history_k: got 0/,
    );
    comparator.dispose();
  });

  it("checks the checkpoint's tokenizer against the agent's", async () => {
    const swapped = [weights[0]![1]!, weights[0]![0]!]; // agent 0 is qwen2, but agent_0's checkpoint is llama
    const comparator = new HistoryComparator({ agents: swapped, generation: GEN, rng: RngStream.fromSeed(1), k: 1, weightsAt: roundDir });
    const before = liveTensorCount();
    await expect(comparator.beginRound(1)).rejects.toThrow(/history checkpoint of round 1 .*agent_0 for agent 0: its tokenizer differs/);
    expect(liveTensorCount()).toBe(before);
    comparator.dispose();
  });
});

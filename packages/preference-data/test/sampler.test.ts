import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RngStream } from "@pbrl/core-tensor";
import { generate, loadPretrained } from "@pbrl/models";
import { ParallelPolicySampler, PolicySampler, sampleAgentRows, type GenerationSettings, type Policy } from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

const MODELS = MODEL_FIXTURES;
const settings: GenerationSettings = { maxNewTokens: 6, temperature: 1.1, topP: 1, topK: null, maxBatchRows: 4 };
const prompts = [
  ["The cat", "A bird"],
  ["We drink", "Snow falls"],
  ["The river", "Old trees"],
];

async function policies(): Promise<Policy[]> {
  const out: Policy[] = [];
  for (const [name, eos, pad] of [
    ["tiny-llama", 2, 0],
    ["tiny-qwen2", 383, 381],
  ] as const) {
    const p = await loadPretrained(path.join(MODELS, name));
    out.push({ model: p.model, tokenizer: p.tokenizer!, eosTokenIds: [eos], padTokenId: pad });
  }
  return out;
}

describe("the policy samplers", () => {
  it("give each agent its own stream split off the sampler's: agent 1's candidates do not depend on agent 0's", async () => {
    const agents = await policies();
    const both = new PolicySampler(agents, settings, RngStream.fromSeed(3, "policy")).sample(prompts, 3);
    // Agent 1 alone, from the second split of the same stream (the first went to agent 0).
    const rng = RngStream.fromSeed(3, "policy");
    rng.split();
    const ids = prompts.map((p) => agents[1]!.tokenizer.encode(p[1]!));
    const alone = sampleAgentRows(agents[1]!, ids, 3, settings, rng.split());
    expect(both.flatMap((item) => item[1]!.tokens)).toEqual(alone);
    // Rows come in calls of at most maxBatchRows (4 rows: one prompt × 3 candidates per call), as a direct generate of one prompt.
    const direct = generate(agents[1]!.model, [ids[0]!], {
      maxNewTokens: 6,
      temperature: 1.1,
      topP: 1,
      topK: 0,
      numReturnSequences: 3,
      eosTokenIds: [383],
      padTokenId: 381,
      rng: (() => {
        const r = RngStream.fromSeed(3, "policy");
        r.split();
        return r.split();
      })(),
    });
    expect(both[0]![1]!.tokens).toEqual(direct.map((d) => d.tokens));
    expect(both[0]![1]!.texts).toEqual(direct.map((d) => agents[1]!.tokenizer.decode(d.tokens)));
    agents.forEach((a) => a.model.dispose());
  });

  it("ParallelPolicySampler returns exactly PolicySampler's samples, whatever order the agents finish in", async () => {
    const agents = await policies();
    const sequential = new PolicySampler(agents, settings, RngStream.fromSeed(7, "policy"));
    const finished: number[] = [];
    const parallel = new ParallelPolicySampler(agents, settings, RngStream.fromSeed(7, "policy"), async (a, ids, n, s, rng) => {
      await new Promise((r) => setTimeout(r, a === 0 ? 30 : 1)); // agent 0 finishes last
      finished.push(a);
      return sampleAgentRows(agents[a]!, ids, n, s, rng);
    });
    for (let call = 0; call < 2; call++) expect(await parallel.sample(prompts, 2)).toEqual(sequential.sample(prompts, 2));
    expect(finished).toEqual([1, 0, 1, 0]);
    agents.forEach((a) => a.model.dispose());
  });
});

// Shared fixtures: agents built from the tiny Llama checkpoint of @pbrl/test-fixtures (real models,
// real tokenizer, real sampler; nothing mocked).
import { AdamW, RngStream } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM, type Pretrained, type Tokenizer } from "@pbrl/models";
import { PolicySampler, type Formatter, type Policy } from "@pbrl/preference-data";
import type { TrainableAgent } from "../src/index.js";
import { TINY_LLAMA } from "@pbrl/test-fixtures";

export { TINY_LLAMA };
export const EOS = 2;

let cached: Pretrained | undefined;
export async function tinyLlama(): Promise<{ model: CausalLM; tokenizer: Tokenizer }> {
  cached ??= await loadPretrained(TINY_LLAMA);
  return { model: cached.model, tokenizer: cached.tokenizer! };
}

export interface TestAgent extends TrainableAgent, Policy {}

/**
 * `n` agents, each an independent copy of the checkpoint. `stops` are the ids that end a row
 * (EOS plus, to get varied lengths from a random tiny model, a few frequent tokens);
 * `padTokenId` may equal one of them.
 */
export async function makeAgents(n: number, o: { lr?: number; eps?: number; stops?: number[]; padTokenId?: number } = {}): Promise<TestAgent[]> {
  const { model, tokenizer } = await tinyLlama();
  return Array.from({ length: n }, () => {
    const m = model.clone();
    return {
      model: m,
      tokenizer,
      eosTokenIds: o.stops ?? [EOS],
      padTokenId: o.padTokenId ?? 0,
      optimizer: new AdamW(m.params, { lr: o.lr ?? 1e-2, eps: o.eps ?? 1e-8, weightDecay: 0 }),
    };
  });
}

/** Independent copies of agents (same weights, fresh optimizers). */
export function copyAgents(agents: readonly TestAgent[], o: { lr?: number; eps?: number } = {}): TestAgent[] {
  return agents.map((a) => {
    const m = a.model.clone();
    return { ...a, model: m, optimizer: new AdamW(m.params, { lr: o.lr ?? a.optimizer.lr, eps: o.eps ?? a.optimizer.eps, weightDecay: 0 }) };
  });
}

export function disposeAgents(agents: readonly TrainableAgent[]): void {
  for (const a of agents) {
    a.optimizer.dispose();
    a.model.dispose();
  }
}

export function sampler(agents: readonly Policy[], seed = 1, maxNewTokens = 6): PolicySampler {
  return new PolicySampler(agents, { maxNewTokens, temperature: 1, topP: 1, topK: null, maxBatchRows: 64 }, RngStream.fromSeed(seed, "policy"));
}

export const ITEMS = [
  { prompt: "Hello world", id: "a" },
  { prompt: "Add two numbers", id: "b" },
  { prompt: "Once upon a time", id: "c" },
];
export const formatters = (n: number): Formatter[] => Array.from({ length: n }, (_, i) => (item) => `Agent ${i + 1}: ${String(item["prompt"])}`);

/** Largest absolute difference between two models' weights. */
export function maxWeightDiff(a: CausalLM, b: CausalLM): number {
  const wb = b.hostWeights();
  let worst = 0;
  for (const [k, t] of a.hostWeights()) t.data.forEach((v, i) => (worst = Math.max(worst, Math.abs(v - wb.get(k)!.data[i]!))));
  return worst;
}

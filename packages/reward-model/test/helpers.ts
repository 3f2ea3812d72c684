import * as path from "node:path";
import type { RngStream } from "@pbrl/core-tensor";
import type { PairRecord } from "@pbrl/preference-data";
import { MODEL_FIXTURES, TINY_LLAMA } from "@pbrl/test-fixtures";

export { TINY_LLAMA };
export const MODELS = MODEL_FIXTURES;
export const TINY_QWEN2 = path.join(MODELS, "tiny-qwen2");
export const FIXTURES = path.join(import.meta.dirname, "fixtures");

const WORDS = ["cat", "dog", "tree", "river", "blue", "green", "quick", "slow", "house", "road", "sun", "rain", "bread", "stone", "bird", "lamp"];
export const MARKER = "excellent";

function words(rng: RngStream, n: number): string {
  return Array.from({ length: n }, () => WORDS[rng.int(WORDS.length)]!).join(" ");
}

/**
 * Two-agent pairs whose winner always ends agent 2's response with the marker word and whose
 * loser ends it with an ordinary word; everything else is random filler shared by both sides.
 */
export function markerPairs(rng: RngStream, count: number): PairRecord[] {
  return Array.from({ length: count }, () => {
    const prompts = [`Describe the ${words(rng, 1)}.`, `Review the ${words(rng, 1)}.`];
    const first = words(rng, 3);
    const second = words(rng, 2);
    return {
      prompts,
      winner_completions: [first, `${second} ${MARKER}`],
      loser_completions: [first, `${second} ${words(rng, 1)}`],
      winner_reward: 1,
      loser_reward: 0,
      candidate_reward_mean: 0.5,
    };
  });
}

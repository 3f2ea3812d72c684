// Typed access to the fixtures written by scripts/reference/make_model_fixtures.py.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

export const FIXTURES = MODEL_FIXTURES;

export interface Reference {
  prompts: { text: string; input_ids: number[]; logits: number[][] }[];
  greedy: { max_new_tokens: number; results: { input_ids: number[]; new_token_ids: number[]; text: string }[] };
  greedy_batched: { max_new_tokens: number; pad_token_id: number; rows: { input_ids: number[]; attention_mask: number[]; new_token_ids: number[] }[] };
  logprobs: { items: { prompt_ids: number[]; completion_ids: number[]; token_logprobs: number[]; sum: number }[] };
  tokenizer: { text: string; ids: number[]; ids_no_special: number[]; decoded: string; decoded_with_special: string }[];
  chat_template: { messages: { role: string; content: string }[]; add_generation_prompt: boolean; rendered: string }[];
}

export function reference(name: string): Reference {
  return JSON.parse(readFileSync(path.join(FIXTURES, `${name}.reference.json`), "utf8")) as Reference;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length mismatch ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

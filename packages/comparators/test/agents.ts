// Real tiny checkpoints from @pbrl/models' fixtures, wrapped as the trainer wraps its agents.
import * as path from "node:path";
import { tf } from "@pbrl/core-tensor";
import { loadPretrained, type CausalLM } from "@pbrl/models";
import type { CentralizedAdapter, GenerationSettings, Policy, TaskItem } from "@pbrl/preference-data";
import { TaggedCentralizedAdapter } from "../src/index.js";
import { MODEL_FIXTURES } from "@pbrl/test-fixtures";

export const FIXTURES = MODEL_FIXTURES;
export const LLAMA = path.join(FIXTURES, "tiny-llama");
export const LLAMA_BF16 = path.join(FIXTURES, "tiny-llama-bf16");
export const QWEN = path.join(FIXTURES, "tiny-qwen2");

export const GEN: GenerationSettings = { maxNewTokens: 6, temperature: 1, topP: 1, topK: null, maxBatchRows: 16 };

export const ITEMS: TaskItem[] = [{ prompt: "The cat" }, { prompt: "We drink tea and" }];
/** prompts[item][agent] for two agents. */
export const PROMPTS = [
  ["The cat", "A dog"],
  ["We drink tea and", "Birds sing"],
];

export function policyOf(model: CausalLM, tokenizer: Policy["tokenizer"], eos: readonly number[], pad: number): Policy {
  return { model, tokenizer, eosTokenIds: eos, padTokenId: pad };
}

export async function loadAgent(dir = LLAMA): Promise<Policy> {
  const p = await loadPretrained(dir);
  return policyOf(p.model, p.tokenizer!, p.generation.eosTokenIds, p.generation.padTokenId ?? 0);
}

/** Moves every weight by seeded noise, so the model answers clearly differently. */
export function perturb(model: CausalLM, seed: number, scale = 0.3): void {
  let s = seed;
  for (const v of model.params.values()) {
    s += 1;
    const noise = tf.tidy(() => tf.add(v, tf.randomNormal(v.shape, 0, scale, "float32", s)));
    v.assign(noise);
    noise.dispose();
  }
}

/**
 * The tagged adapter's parsing with a short joint prompt: the full tagged instructions are longer
 * than the tiny fixtures' 256-position context, which generation now refuses to run past.
 */
export class ShortTaggedAdapter implements CentralizedAdapter {
  private readonly tagged = new TaggedCentralizedAdapter();
  buildPrompt(_item: TaskItem, prompts: readonly string[]): string {
    return prompts.map((p, i) => `<agent_${i}>${p}</agent_${i}>`).join("\n") + "\n";
  }
  parseCompletion(completion: string, item: TaskItem, numAgents: number): string[] {
    return this.tagged.parseCompletion(completion, item, numAgents);
  }
}

/**
 * A device other than the agents' ("cpu") for the tests of copies made when the devices differ: on
 * a one-device backend any name (a copy stays where its agent is); on libtorch a real second
 * device from PBRL_TEST_DEVICES (scripts/gpu/check.sh lists CUDA ones), else undefined and those
 * tests are skipped (there is no second device to copy to).
 */
export const OTHER_DEVICE: string | undefined =
  process.env["PBRL_BACKEND"] === "libtorch"
    ? (process.env["PBRL_TEST_DEVICES"] ?? "")
        .split(",")
        .map((d) => d.trim())
        .find((d) => d !== "" && d !== "cpu")
    : "copy-device";

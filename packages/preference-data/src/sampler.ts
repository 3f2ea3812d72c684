import type { RngStream } from "@pbrl/core-tensor";
import { generate, type CausalLM, type Tokenizer } from "@pbrl/models";

/** One agent's sampled answers to one prompt. */
export interface AgentSamples {
  promptIds: number[];
  /** Generated token ids per candidate, the stop token included when one ended it. */
  tokens: number[][];
  texts: string[];
}

/**
 * Produces candidates: for each item's per-agent prompts, `n` answers per agent. The trainers'
 * policies implement it with `PolicySampler`; a comparator or a test can implement it otherwise.
 */
export interface CandidateSampler {
  sample(prompts: readonly (readonly string[])[], n: number): AgentSamples[][];
}

/** A policy that can answer prompts: a model with its tokenizer and stop ids. */
export interface Policy {
  model: CausalLM;
  tokenizer: Tokenizer;
  eosTokenIds: readonly number[];
  padTokenId: number;
}

export interface GenerationSettings {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  /** null disables top-k, as CoMLRL's top_k=None. */
  topK: number | null;
  /** Upper bound on rows (prompts × candidates) per generate call. */
  maxBatchRows: number;
}

/**
 * Samples every agent's candidates with its own policy, batching all prompts of a call (items ×
 * candidates rows, up to maxBatchRows) into one left-padded generation per agent.
 */
export class PolicySampler implements CandidateSampler {
  constructor(
    private readonly policies: readonly Policy[],
    private readonly settings: GenerationSettings,
    private readonly rng: RngStream,
  ) {}

  sample(prompts: readonly (readonly string[])[], n: number): AgentSamples[][] {
    const out: AgentSamples[][] = prompts.map(() => []);
    const perCall = Math.max(1, Math.floor(this.settings.maxBatchRows / n));
    this.policies.forEach((policy, a) => {
      const ids = prompts.map((p) => {
        const text = p[a];
        if (text === undefined) throw new RangeError(`no prompt for agent ${a}`);
        return policy.tokenizer.encode(text);
      });
      for (let start = 0; start < ids.length; start += perCall) {
        const chunk = ids.slice(start, start + perCall);
        const rows = generate(policy.model, chunk, {
          maxNewTokens: this.settings.maxNewTokens,
          temperature: this.settings.temperature,
          topP: this.settings.topP,
          topK: this.settings.topK ?? 0,
          numReturnSequences: n,
          eosTokenIds: policy.eosTokenIds,
          padTokenId: policy.padTokenId,
          rng: this.rng,
        });
        chunk.forEach((promptIds, k) => {
          const mine = rows.slice(k * n, (k + 1) * n);
          out[start + k]![a] = { promptIds, tokens: mine.map((r) => r.tokens), texts: mine.map((r) => policy.tokenizer.decode(r.tokens)) };
        });
      }
    });
    return out;
  }
}

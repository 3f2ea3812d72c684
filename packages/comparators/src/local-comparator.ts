import type { RngStream } from "@pbrl/core-tensor";
import { PolicySampler, type CandidateSet, type Comparator, type GenerationSettings, type TaskItem } from "@pbrl/preference-data";
import type { PolicySource } from "./policy-source.js";

/**
 * A comparator whose agents answer their own prompts with local models (decentralized
 * generation). It samples from its own stream, never the agents' policy stream, so the target's
 * sampling does not depend on how much the comparator sampled.
 */
export class LocalComparator implements Comparator {
  readonly description: string;

  constructor(
    readonly source: PolicySource,
    private readonly generation: GenerationSettings,
    private readonly rng: RngStream,
    description = source.description,
  ) {
    this.description = description;
  }

  beginRound(round: number): Promise<void> {
    return this.source.beginRound(round);
  }

  async sample(items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    if (prompts.length !== items.length) throw new RangeError(`${this.description}: ${prompts.length} prompt lists for ${items.length} items`);
    const policies = this.source.policies();
    prompts.forEach((p, k) => {
      if (p.length !== policies.length)
        throw new RangeError(`${this.description}: item ${k} has ${p.length} agent prompts, the comparator has ${policies.length} agents`);
    });
    const samples = new PolicySampler(policies, this.generation, this.rng).sample(prompts, n);
    const withIds = policies.every((p) => p.sharesAgentVocabulary);
    return samples.map((agents) => ({
      texts: agents.map((s) => s.texts),
      ...(withIds ? { tokens: agents.map((s) => s.tokens) } : {}),
      // The sampler keeps the stop token in the ids, so a last id among the stop ids means it stopped.
      stopped: agents.map((s, a) => s.tokens.map((t) => t.length > 0 && policies[a]!.eosTokenIds.includes(t[t.length - 1]!))),
      valid: Array.from({ length: n }, () => true),
    }));
  }

  endRound(): Promise<void> {
    return this.source.endRound();
  }

  dispose(): void {
    this.source.dispose();
  }
}

import type { RngStream } from "@pbrl/core-tensor";
import { generate, type GeneratedSequence } from "@pbrl/models";
import type { CandidateSet, CentralizedAdapter, Comparator, GenerationSettings, TaskItem } from "@pbrl/preference-data";
import type { PolicySource, RoundPolicy } from "./policy-source.js";
import { splitJointCompletions } from "./split-joint.js";

export interface CentralizedComparatorOptions {
  /** Serves exactly one policy: the model that writes every role's response. */
  generator: PolicySource;
  adapter: CentralizedAdapter;
  generation: GenerationSettings;
  /** The comparator's own stream, distinct from the agents' policy stream. */
  rng: RngStream;
  description?: string;
}

/**
 * comparator_generation_mode="centralized": one model reads a joint prompt built from every
 * agent's prompt and writes all role responses as one joint completion, which the adapter splits.
 * Unparseable completions become invalid candidates. No token ids go out (a role's text is a
 * piece of the joint sequence); the trainer tokenizes each role's text with its agent's tokenizer,
 * appending EOS when the joint completion stopped.
 */
export class CentralizedComparator implements Comparator {
  readonly description: string;
  readonly generator: PolicySource;

  constructor(private readonly o: CentralizedComparatorOptions) {
    this.generator = o.generator;
    this.description = o.description ?? `centralized (${o.generator.description})`;
  }

  beginRound(round: number): Promise<void> {
    return this.o.generator.beginRound(round);
  }

  async sample(items: readonly TaskItem[], prompts: readonly (readonly string[])[], n: number): Promise<CandidateSet[]> {
    if (prompts.length !== items.length) throw new RangeError(`${this.description}: ${prompts.length} prompt lists for ${items.length} items`);
    const policy = this.generatorPolicy();
    const promptIds = items.map((item, k) => {
      const joint = this.o.adapter.buildPrompt(item, prompts[k]!);
      if (typeof joint !== "string" || joint.trim() === "")
        throw new TypeError(
          `${this.description}: the centralized adapter built an empty joint prompt for item ${k}; buildPrompt must return a non-empty string`,
        );
      return policy.tokenizer.encode(joint);
    });
    const rows = this.generateRows(policy, promptIds, n);
    return items.map((item, k) => {
      const mine = rows.slice(k * n, (k + 1) * n);
      const numAgents = prompts[k]!.length;
      const split = splitJointCompletions(
        this.o.adapter,
        mine.map((r) => policy.tokenizer.decode(r.tokens)),
        item,
        numAgents,
      );
      const stopped = mine.map((r, j) => split.valid[j]! && r.finishReason === "stop");
      return { texts: split.texts, stopped: split.texts.map(() => [...stopped]), valid: split.valid };
    });
  }

  endRound(): Promise<void> {
    return this.o.generator.endRound();
  }

  dispose(): void {
    this.o.generator.dispose();
  }

  private generatorPolicy(): RoundPolicy {
    const policies = this.o.generator.policies();
    if (policies.length !== 1)
      throw new Error(`${this.description}: the generator source serves ${policies.length} policies; centralized generation needs exactly one`);
    return policies[0]!;
  }

  /** n rows per prompt, prompt-major, in batches of at most maxBatchRows rows. */
  private generateRows(policy: RoundPolicy, promptIds: readonly number[][], n: number): GeneratedSequence[] {
    const g = this.o.generation;
    const perCall = Math.max(1, Math.floor(g.maxBatchRows / n));
    const out: GeneratedSequence[] = [];
    for (let start = 0; start < promptIds.length; start += perCall) {
      out.push(
        ...generate(policy.model, promptIds.slice(start, start + perCall), {
          maxNewTokens: g.maxNewTokens,
          temperature: g.temperature,
          topP: g.topP,
          topK: g.topK ?? 0,
          numReturnSequences: n,
          eosTokenIds: policy.eosTokenIds,
          padTokenId: policy.padTokenId,
          rng: this.o.rng,
        }),
      );
    }
    return out;
  }
}

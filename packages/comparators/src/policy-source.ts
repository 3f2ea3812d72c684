import type { Policy } from "@pbrl/preference-data";

/** A policy a comparator samples from in the round in progress. */
export interface RoundPolicy extends Policy {
  /**
   * Whether the ids it generates are ids of the agent's own tokenizer, so they can go to the
   * trainer as they are; otherwise the trainer re-tokenizes the decoded text.
   */
  sharesAgentVocabulary: boolean;
}

/**
 * The local models a comparator samples from, prepared per round: the live agents, frozen copies
 * of them, separately loaded models, or earlier weights. One policy per slot the source serves
 * (every agent, or just the centralized generator).
 */
export interface PolicySource {
  readonly description: string;
  beginRound(round: number): Promise<void>;
  /** The round's policies, valid between beginRound and endRound. */
  policies(): readonly RoundPolicy[];
  endRound(): Promise<void>;
  dispose(): void;
}

/** The live agents themselves: what the trainer trains is what the comparator samples. */
export class LiveAgents implements PolicySource {
  readonly description = "live agents";
  private readonly live: RoundPolicy[];

  constructor(agents: readonly Policy[]) {
    this.live = agents.map((a) => ({ ...a, sharesAgentVocabulary: true }));
  }

  async beginRound(): Promise<void> {}
  policies(): readonly RoundPolicy[] {
    return this.live;
  }
  async endRound(): Promise<void> {}
  // The agents belong to the trainer: nothing to free here.
  dispose(): void {}
}

/** Picks `indices` out of `agents`, with an error naming a bad index. */
export function pickAgents<T>(agents: readonly T[], indices: readonly number[] | undefined, what: string): T[] {
  if (indices === undefined) return [...agents];
  return indices.map((i) => {
    const a = agents[i];
    if (!Number.isInteger(i) || a === undefined)
      throw new RangeError(`${what}: agent index ${i} is out of range; there are ${agents.length} agents (0 … ${agents.length - 1})`);
    return a;
  });
}

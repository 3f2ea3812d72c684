import type { CausalLM } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
import type { PolicySource, RoundPolicy } from "./policy-source.js";

/**
 * current_copy: a frozen copy of each agent made at the start of a round, so the comparator keeps
 * answering with the round's starting weights whatever happens to the live ones, and freed when
 * the round's collection ends. With `copy` false it is the live agents (CoMLRL copies only when
 * comparator_devices differ from agent_devices; in pbrl every tensor lives on the backend's one
 * device, so equal or unspecified devices mean no copy, exactly like `current`).
 */
export class RoundCopies implements PolicySource {
  readonly description: string;
  private copies: RoundPolicy[] | undefined;

  constructor(
    private readonly agents: readonly Policy[],
    private readonly copy: boolean,
  ) {
    this.description = copy ? "frozen copies of the agents made at round start" : "live agents (comparator devices equal the agents')";
  }

  async beginRound(): Promise<void> {
    if (!this.copy) return;
    this.release();
    const made: CausalLM[] = [];
    try {
      for (const a of this.agents) made.push(a.model.clone());
    } catch (err) {
      made.forEach((m) => m.dispose());
      throw err;
    }
    this.copies = this.agents.map((a, i) => ({ ...a, model: made[i]!, sharesAgentVocabulary: true }));
  }

  policies(): readonly RoundPolicy[] {
    if (!this.copy) return this.agents.map((a) => ({ ...a, sharesAgentVocabulary: true }));
    if (this.copies === undefined) throw new Error("current_copy comparator: sample() called outside a round; call beginRound first");
    return this.copies;
  }

  async endRound(): Promise<void> {
    this.release();
  }

  dispose(): void {
    this.release();
  }

  private release(): void {
    this.copies?.forEach((c) => c.model.dispose());
    this.copies = undefined;
  }
}

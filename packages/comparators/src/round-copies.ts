import type { CausalLM } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
import { placement } from "./devices.js";
import type { PolicySource, RoundPolicy } from "./policy-source.js";

/**
 * current_copy: a frozen copy of each agent made at the start of a round, so the comparator keeps
 * answering with the round's starting weights whatever happens to the live ones, and freed when
 * the round's collection ends. With `copy` false it is the live agents (CoMLRL copies only when
 * comparator_devices differ from agent_devices, so equal or unspecified devices mean no copy,
 * exactly like `current`). On libtorch each copy goes to its slot's comparator device; on a
 * backend with one device it stays there (see `placement`).
 */
export class RoundCopies implements PolicySource {
  readonly description: string;
  private copies: RoundPolicy[] | undefined;

  /** `devices[slot]`: where the copy of `agents[slot]` goes (default: where the agent is). */
  constructor(
    private readonly agents: readonly Policy[],
    private readonly copy: boolean,
    private readonly devices?: readonly string[],
  ) {
    if (devices !== undefined && devices.length !== agents.length)
      throw new RangeError(`current_copy comparator: ${devices.length} devices for ${agents.length} agents`);
    this.description = copy ? "frozen copies of the agents made at round start" : "live agents (comparator devices equal the agents')";
  }

  async beginRound(): Promise<void> {
    if (!this.copy) return;
    this.release();
    const made: CausalLM[] = [];
    try {
      for (const [slot, a] of this.agents.entries()) made.push(a.model.clone(placement(this.devices?.[slot])));
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

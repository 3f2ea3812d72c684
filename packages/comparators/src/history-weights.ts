import { existsSync } from "node:fs";
import * as path from "node:path";
import type { Policy } from "@pbrl/preference-data";
import { loadAdapterOnto, type CausalLM } from "@pbrl/models";
import { placement } from "./devices.js";
import { loadModelSources, pairWithAgent, releaseLoaded, type LoadedModel } from "./model-sources.js";
import type { PolicySource, RoundPolicy } from "./policy-source.js";

/**
 * Where the weights that round `round` (1-based) started from are: a folder holding one
 * `agent_<i>` checkpoint folder per agent. Round 1's are the initial policy.
 */
export type WeightsAt = (round: number) => string | Promise<string>;

export interface HistoryWeightsOptions {
  /** comparator_history_k: how many rounds back (≥ 1). */
  k: number;
  weightsAt: WeightsAt;
  /** Every agent of the run; their tokenizers and stop ids go with the loaded weights. */
  agents: readonly Policy[];
  /** The agents to load (default all); the centralized generator loads only its own. */
  agentIndices?: readonly number[];
  /** Where each agent's checkpoint goes, by agent index (comparator_devices resolved; default "auto"). */
  devices?: readonly string[];
}

/**
 * `history`: round t answers with the weights round t − k started from, so k = 1 is the previous
 * round's policy (CoMLRL's k = 1 gives a copy of the current weights); rounds t ≤ k use the
 * initial policy. The checkpoint is loaded once in beginRound (CoMLRL reloads it per item) and
 * freed in endRound.
 */
export class HistoryWeights implements PolicySource {
  readonly description: string;
  private readonly indices: readonly number[];
  // Stryker disable next-line ArrayDeclaration: release() frees only entries marked owned, so a placeholder entry changes nothing, and the first load replaces the array
  private loaded: LoadedModel[] = [];
  private ready: RoundPolicy[] | undefined;

  constructor(private readonly o: HistoryWeightsOptions) {
    if (!Number.isInteger(o.k) || o.k < 1) throw new RangeError(`comparator_history_k: got ${o.k}; expected an integer ≥ 1`);
    this.indices = o.agentIndices ?? o.agents.map((_, i) => i);
    for (const i of this.indices) {
      if (!Number.isInteger(i) || o.agents[i] === undefined)
        throw new RangeError(`history comparator: agent index ${i} is out of range; there are ${o.agents.length} agents`);
    }
    this.description = `weights from ${o.k} round${o.k === 1 ? "" : "s"} back`;
  }

  /** The round whose starting weights round `round` compares with. */
  sourceRound(round: number): number {
    return Math.max(1, round - this.o.k);
  }

  async beginRound(round: number): Promise<void> {
    if (!Number.isInteger(round) || round < 1) throw new RangeError(`history comparator: round must be an integer ≥ 1, got ${round}`);
    this.release();
    const from = this.sourceRound(round);
    const dir = await this.o.weightsAt(from);
    const folders = this.indices.map((i) => path.join(dir, `agent_${i}`));
    // A full checkpoint per agent, or a LoRA agent's adapter (adapter_config.json).
    const missing = folders.filter((f) => !existsSync(path.join(f, "config.json")) && !existsSync(path.join(f, "adapter_config.json")));
    if (missing.length > 0) {
      throw new Error(
        `history comparator (round ${round}, k=${this.o.k}): the weights round ${from} started from are incomplete; missing checkpoint folder${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}`,
      );
    }
    const loaded = await loadHistory(
      folders,
      this.indices.map((i) => this.o.agents[i]!.model),
      this.indices.map((i) => this.o.devices?.[i] ?? "auto"),
    );
    try {
      this.ready = loaded.map((m, slot) => pairWithAgent(m, this.o.agents[this.indices[slot]!]!, this.indices[slot]!, `history checkpoint of round ${from}`));
      this.loaded = loaded;
    } catch (err) {
      releaseLoaded(loaded);
      throw err;
    }
  }

  policies(): readonly RoundPolicy[] {
    if (this.ready === undefined) throw new Error("history comparator: sample() called outside a round; call beginRound first");
    return this.ready;
  }

  async endRound(): Promise<void> {
    this.release();
  }

  dispose(): void {
    this.release();
  }

  private release(): void {
    releaseLoaded(this.loaded);
    // Stryker disable next-line ArrayDeclaration: as for the field's initial value, release() skips entries not marked owned
    this.loaded = [];
    this.ready = undefined;
  }
}

/**
 * The history checkpoint's models: a LoRA agent's adapter onto the agent's own base (its snapshot
 * is an adapter, no second copy of the base) when it stays on the agent's device; full checkpoints
 * (and adapters placed elsewhere) as model sources.
 */
async function loadHistory(folders: readonly string[], agents: readonly CausalLM[], devices: readonly string[]): Promise<LoadedModel[]> {
  const onAgentBase = (i: number) => agents[i]!.adapter !== undefined && (placement(devices[i]) ?? agents[i]!.device()) === agents[i]!.device();
  const rest = folders.map((_, i) => i).filter((i) => !onAgentBase(i));
  // Stryker disable next-line ArrayDeclaration: every slot is assigned below, so an array started empty ends the same
  const loaded: LoadedModel[] = new Array<LoadedModel>(folders.length);
  const others = await loadModelSources(
    rest.map((i) => folders[i]!),
    rest.map((i) => devices[i]!),
  );
  rest.forEach((i, slot) => (loaded[i] = others[slot]!));
  try {
    for (const [i, folder] of folders.entries()) {
      if (onAgentBase(i)) loaded[i] = { model: await loadAdapterOnto(folder, agents[i]!), tokenizer: undefined, owned: true, label: folder };
    }
  } catch (err) {
    // Stryker disable next-line ConditionalExpression: filter skips the holes (slots not loaded yet) whatever the predicate, and every assigned slot holds a model
    releaseLoaded(loaded.filter((m) => m !== undefined));
    throw err;
  }
  return loaded;
}

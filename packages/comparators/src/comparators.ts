import { resolveDevices, type DeviceSpec, type RngStream } from "@pbrl/core-tensor";
import type { GenerationSettings, Policy } from "@pbrl/preference-data";
import { comparatorDevices, comparatorDevicesDiffer } from "./devices.js";
import { FrozenModels } from "./frozen-models.js";
import { HistoryWeights, type WeightsAt } from "./history-weights.js";
import { LocalComparator } from "./local-comparator.js";
import { decentralizedModelSources, type ModelSource } from "./model-sources.js";
import { LiveAgents } from "./policy-source.js";
import { RoundCopies } from "./round-copies.js";

/** What every local comparator needs: the run's agents, the sampling settings and its own stream. */
export interface LocalComparatorOptions {
  /** The live agents, the same objects the trainer trains. */
  agents: readonly Policy[];
  generation: GenerationSettings;
  /** The comparator's stream, distinct from the agents' policy stream. */
  rng: RngStream;
}

/** `current`: self-play against the live agents, sampled from a separate stream. */
export class CurrentComparator extends LocalComparator {
  constructor(o: LocalComparatorOptions) {
    super(new LiveAgents(o.agents), o.generation, o.rng, "current");
  }
}

/** Where a comparator's models live: comparator_devices, falling back to agent_devices. */
export interface ComparatorDeviceOptions {
  /** comparator_devices (falls back to agentDevices). */
  devices?: DeviceSpec;
  /** agent_devices. */
  agentDevices?: DeviceSpec;
}

export type CurrentCopyOptions = LocalComparatorOptions & ComparatorDeviceOptions;

/**
 * `current_copy`: frozen copies of the agents made at each round start when comparator_devices
 * differ from agent_devices (by name), each on its comparator device (libtorch). With equal or
 * unspecified devices it samples the live agents, like `current`.
 */
export class CurrentCopyComparator extends LocalComparator {
  constructor(o: CurrentCopyOptions) {
    const n = o.agents.length;
    const copy = comparatorDevicesDiffer(
      o.devices,
      o.agentDevices,
      n,
      o.agents.map((_, i) => i),
    );
    // A copy exists because the names differ, so "auto" here is the backend's default device.
    // Stryker disable next-line StringLiteral: comparatorDevicesDiffer above already refused a wrong count of the same devices under this label, so this call never throws
    const devices = resolveDevices(o.devices ?? o.agentDevices, n, "comparator_devices");
    super(new RoundCopies(o.agents, copy, devices), o.generation, o.rng, copy ? "current_copy (frozen copies)" : "current_copy (live agents: same devices)");
  }
}

export interface ModelComparatorOptions extends LocalComparatorOptions, ComparatorDeviceOptions {
  /** comparator_model_name: one model for every agent. */
  modelName?: ModelSource | null;
  /** comparator_agents: one model per agent; wins over modelName. */
  comparatorAgents?: readonly ModelSource[] | null;
}

/**
 * `model`: separately loaded frozen models, loaded once on the first round (or up front with
 * `ModelComparator.load`), each using its agent's tokenizer (checked to be the same). Models
 * passed in as objects stay the caller's to free.
 */
export class ModelComparator extends LocalComparator {
  private readonly models: FrozenModels;

  constructor(o: ModelComparatorOptions) {
    const n = o.agents.length;
    const models = new FrozenModels(
      decentralizedModelSources(o.modelName, o.comparatorAgents, n),
      o.agents,
      undefined,
      comparatorDevices(o.devices, o.agentDevices, n),
    );
    super(models, o.generation, o.rng, `model (${models.description})`);
    this.models = models;
  }

  /** Builds the comparator and loads its models now. */
  static async load(o: ModelComparatorOptions): Promise<ModelComparator> {
    const c = new ModelComparator(o);
    // A failed load holds nothing (FrozenModels frees what it loaded): nothing to dispose here.
    await c.models.load();
    return c;
  }
}

export interface HistoryComparatorOptions extends LocalComparatorOptions, ComparatorDeviceOptions {
  /** comparator_history_k (≥ 1). */
  k: number;
  weightsAt: WeightsAt;
}

/** `history`: round t answers with the weights round t − k started from (the initial policy while t ≤ k). */
export class HistoryComparator extends LocalComparator {
  constructor(o: HistoryComparatorOptions) {
    const devices = comparatorDevices(o.devices, o.agentDevices, o.agents.length);
    super(new HistoryWeights({ k: o.k, weightsAt: o.weightsAt, agents: o.agents, devices }), o.generation, o.rng, `history (k=${o.k})`);
  }
}

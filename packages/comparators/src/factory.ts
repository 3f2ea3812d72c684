import { resolveDevices, type DeviceSpec, type RngStream } from "@pbrl/core-tensor";
import type { CentralizedAdapter, Comparator, GenerationSettings, Policy } from "@pbrl/preference-data";
import { ApiComparator, type ApiComparatorSettings } from "./api/api-comparator.js";
import { CentralizedComparator } from "./centralized.js";
import { CurrentComparator, CurrentCopyComparator, HistoryComparator, ModelComparator } from "./comparators.js";
import { comparatorDevices, comparatorDevicesDiffer } from "./devices.js";
import { FrozenModels } from "./frozen-models.js";
import { HistoryWeights, type WeightsAt } from "./history-weights.js";
import { centralizedModelSource, type ModelSource } from "./model-sources.js";
import { LiveAgents, pickAgents, type PolicySource } from "./policy-source.js";
import { RoundCopies } from "./round-copies.js";
import { TaggedCentralizedAdapter } from "./tagged-adapter.js";

export type ComparatorPolicy = "current" | "current_copy" | "model" | "history" | "api";
export type ComparatorGenerationMode = "decentralized" | "centralized";

/** Normalized comparator_* config values plus what the trainer owns. */
export interface ComparatorOptions {
  /** comparator_policy */
  policy: ComparatorPolicy;
  /** comparator_generation_mode (default decentralized) */
  generationMode?: ComparatorGenerationMode;
  /** comparator_centralized_agent_index (default 0) */
  centralizedAgentIndex?: number;
  /** comparator_model_name */
  modelName?: ModelSource | null;
  /** comparator_agents */
  comparatorAgents?: readonly ModelSource[] | null;
  /** comparator_history_k (default 1) */
  historyK?: number | null;
  /** comparator_devices */
  devices?: DeviceSpec;
  /** agent_devices */
  agentDevices?: DeviceSpec;
  /** The live agents, the same objects the trainer trains. */
  agents: readonly Policy[];
  generation: GenerationSettings;
  /** The comparator's own stream. */
  rng: RngStream;
  /** Centralized mode's adapter (default TaggedCentralizedAdapter). */
  adapter?: CentralizedAdapter;
  /** Required by policy "history": where each round's starting weights are. */
  weightsAt?: WeightsAt;
  /** Required by policy "api": the API comparator's settings (a trainer translates its comparator_api_* fields). */
  api?: ApiComparatorSettings;
}

/** Builds the comparator the config asks for. Nothing is loaded until the first beginRound. */
export function createComparator(o: ComparatorOptions): Comparator {
  if (o.policy === "api") {
    if (o.api === undefined)
      throw new Error('comparator_policy="api" is not available in @pbrl/comparators without ComparatorOptions.api (the comparator_api_* settings)');
    const mode = o.generationMode ?? "decentralized";
    const index = o.centralizedAgentIndex ?? 0;
    if (mode === "centralized" && o.agents.length > 0) pickAgents(o.agents, [index], "comparator_centralized_agent_index");
    // The agents' tokenizers hold remote completions to max_new_tokens, as the agents are held.
    const tokenizers = o.agents.map((a) => a.tokenizer);
    return new ApiComparator({
      ...o.api,
      generation: o.generation,
      generationMode: mode,
      centralizedAgentIndex: index,
      tokenizers,
      ...(o.adapter !== undefined && { adapter: o.adapter }),
    });
  }
  if (o.agents.length === 0) throw new RangeError("a comparator needs at least one agent");
  const k = o.historyK ?? 1;
  const weightsAt = (): WeightsAt => {
    if (o.weightsAt === undefined) throw new Error('comparator_policy="history" needs weightsAt: where the weights each round started from are saved');
    return o.weightsAt;
  };
  if ((o.generationMode ?? "decentralized") === "decentralized") {
    const base = { agents: o.agents, generation: o.generation, rng: o.rng };
    const placed = { devices: o.devices, agentDevices: o.agentDevices };
    switch (o.policy) {
      case "current":
        return new CurrentComparator(base);
      case "current_copy":
        return new CurrentCopyComparator({ ...base, ...placed });
      case "model":
        return new ModelComparator({ ...base, ...placed, modelName: o.modelName, comparatorAgents: o.comparatorAgents });
      case "history":
        return new HistoryComparator({ ...base, ...placed, k, weightsAt: weightsAt() });
      default:
        return unknownPolicy(o.policy);
    }
  }
  const index = o.centralizedAgentIndex ?? 0;
  const [agent] = pickAgents(o.agents, [index], "comparator_centralized_agent_index");
  // The generator sits on the comparator device of the agent it stands for.
  const devices = comparatorDevices(o.devices, o.agentDevices, o.agents.length);
  let generator: PolicySource;
  switch (o.policy) {
    case "current":
      generator = new LiveAgents([agent!]);
      break;
    case "current_copy":
      generator = new RoundCopies([agent!], comparatorDevicesDiffer(o.devices, o.agentDevices, o.agents.length, [index]), [
        resolveDevices(o.devices ?? o.agentDevices, o.agents.length, "comparator_devices")[index]!,
      ]);
      break;
    case "model":
      generator = new FrozenModels([centralizedModelSource(o.modelName, o.comparatorAgents, index)], [agent!], [index], [devices[index]!]);
      break;
    case "history":
      generator = new HistoryWeights({ k, weightsAt: weightsAt(), agents: o.agents, agentIndices: [index], devices });
      break;
    default:
      return unknownPolicy(o.policy);
  }
  const policy = o.policy === "history" ? `history (k=${k})` : o.policy;
  return new CentralizedComparator({
    generator,
    adapter: o.adapter ?? new TaggedCentralizedAdapter(),
    generation: o.generation,
    rng: o.rng,
    description: `centralized ${policy} (agent ${index} writes every role)`,
  });
}

function unknownPolicy(policy: never): never {
  throw new Error(`comparator_policy: unknown value ${JSON.stringify(policy)}; expected current, current_copy, model, history or api`);
}

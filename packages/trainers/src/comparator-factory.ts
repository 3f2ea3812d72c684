import { apiSettingsFromConfig, createComparator } from "@pbrl/comparators";
import type { RngStream } from "@pbrl/core-tensor";
import type { CentralizedAdapter, Comparator, GenerationSettings, Policy } from "@pbrl/preference-data";
import type { MADPOIterConfig } from "./config/madpo-iter-config.js";

/** The comparator the iterative config describes. */
export function buildComparator(o: {
  args: MADPOIterConfig;
  agents: readonly Policy[];
  rng: RngStream;
  /** Jitter of the API comparator's retry backoff: a stream of its own, so retries never shift sampling. */
  backoffRng: RngStream;
  generation: GenerationSettings;
  adapter: CentralizedAdapter | undefined;
  weightsAt: (round: number) => string;
  log: (line: string) => void;
}): Comparator {
  const a = o.args;
  return createComparator({
    policy: a.comparator_policy,
    generationMode: a.comparator_generation_mode,
    centralizedAgentIndex: a.comparator_centralized_agent_index,
    modelName: a.comparator_model_name,
    comparatorAgents: a.comparator_agents,
    historyK: a.comparator_history_k,
    devices: a.comparator_devices,
    agentDevices: a.agent_devices,
    agents: o.agents,
    generation: o.generation,
    rng: o.rng,
    ...(o.adapter !== undefined ? { adapter: o.adapter } : {}),
    weightsAt: o.weightsAt,
    ...(a.comparator_policy === "api" && {
      api: {
        ...apiSettingsFromConfig(a),
        rng: o.backoffRng,
        log: o.log,
        onRetry: (e) => o.log(`pbrl: comparator API (${e.format}, ${e.url}) attempt ${e.attempt} failed: ${e.reason}; retry ${e.attempt}/${e.maxRetries} in ${(e.delayMs / 1000).toFixed(1)} s`),
      },
    }),
  });
}

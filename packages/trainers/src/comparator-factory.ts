import { createComparator, type ApiComparatorSettings, type ApiFormatName } from "@pbrl/comparators";
import type { RngStream } from "@pbrl/core-tensor";
import type { CentralizedAdapter, Comparator, GenerationSettings, Policy } from "@pbrl/preference-data";
import type { IterativeConfig } from "./config/madpo-iter-config.js";

/** The API comparator's settings from the config's comparator_api_* fields (the one place they are translated). */
export function apiComparatorSettings(a: IterativeConfig): ApiComparatorSettings {
  if (a.comparator_api_url === null) throw new Error('comparator_api_url is required with comparator_policy="api"');
  return {
    // the config accepts only canonical format names (aliases are resolved when it is built)
    format: a.comparator_api_format as ApiFormatName,
    url: a.comparator_api_url,
    model: a.comparator_api_model,
    keyEnv: a.comparator_api_key_env,
    keyHeader: a.comparator_api_key_header,
    keyPrefix: a.comparator_api_key_prefix,
    headers: a.comparator_api_headers,
    extraBody: a.comparator_api_extra_body,
    timeoutSeconds: a.comparator_api_timeout,
    maxConcurrency: a.comparator_api_max_concurrency,
    maxRetries: a.comparator_api_max_retries,
    maxNPerRequest: a.comparator_api_max_n_per_request,
    allowPartial: a.comparator_api_allow_partial,
    responseField: a.comparator_api_response_field,
    maxResponseBytes: a.comparator_api_max_response_bytes,
  };
}

/** The comparator the iterative config describes. */
export function buildComparator(o: {
  args: IterativeConfig;
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
    // Where the agents are (agent_devices as applied; with ddp, cuda:LOCAL_RANK where unset on GPUs).
    agentDevices: o.agents.map((p) => p.model.device()),
    agents: o.agents,
    generation: o.generation,
    rng: o.rng,
    ...(o.adapter !== undefined ? { adapter: o.adapter } : {}),
    weightsAt: o.weightsAt,
    ...(a.comparator_policy === "api" && {
      api: {
        ...apiComparatorSettings(a),
        rng: o.backoffRng,
        log: o.log,
        onRetry: (e) =>
          o.log(
            `pbrl: comparator API (${e.format}, ${e.url}) attempt ${e.attempt} failed: ${e.reason}; retry ${e.attempt}/${e.maxRetries} in ${(e.delayMs / 1000).toFixed(1)} s`,
          ),
      },
    }),
  });
}

import { loadPretrained, type CausalLM, type Pretrained, type Tokenizer } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
import { placement } from "./devices.js";
import type { RoundPolicy } from "./policy-source.js";

/** A comparator model: a checkpoint folder or hub id, or an already loaded model. */
export type ModelSource = string | Pretrained | CausalLM;

export class VocabularyMismatchError extends Error {
  override name = "VocabularyMismatchError";
}

/** A model ready to sample, with what is known of its tokenizer. */
export interface LoadedModel {
  model: CausalLM;
  /** The tokenizer shipped with it, when known; used only to check it against the agent's. */
  tokenizer: Tokenizer | undefined;
  /** Whether this package loaded it, and so frees it; objects passed in stay the caller's. */
  owned: boolean;
  label: string;
}

/**
 * Loads a source onto `device` ("auto" or undefined: where the backend puts new tensors; see
 * `placement`). A model object already elsewhere is copied there (the copy is this package's to
 * free; the object stays the caller's), as CoMLRL moves each comparator model to its device.
 */
export async function loadModelSource(source: ModelSource, device?: string): Promise<LoadedModel> {
  const where = placement(device);
  if (typeof source === "string") {
    const p = await loadPretrained(source, where !== undefined ? { device: where } : {});
    return { model: p.model, tokenizer: p.tokenizer, owned: true, label: source };
  }
  const given: LoadedModel =
    "model" in source
      ? { model: source.model, tokenizer: source.tokenizer, owned: false, label: source.dir }
      : { model: source, tokenizer: undefined, owned: false, label: "a CausalLM object" };
  return where !== undefined && given.model.device() !== where ? { ...given, model: given.model.clone(where), owned: true } : given;
}

/**
 * Loads each source once per device, sharing the model between agents that name the same source
 * and device (a frozen model is only read). `devices[i]` places `sources[i]` (default "auto").
 * On failure, frees what was loaded before rethrowing.
 */
export async function loadModelSources(sources: readonly ModelSource[], devices?: readonly string[]): Promise<LoadedModel[]> {
  const bySource = new Map<ModelSource, Map<string, LoadedModel>>();
  const loaded: LoadedModel[] = [];
  try {
    for (const [i, s] of sources.entries()) {
      // Keyed by where the model goes, so names that place nothing (one-device backends) share one load.
      const device = placement(devices?.[i]) ?? "auto";
      const byDevice = bySource.get(s) ?? new Map<string, LoadedModel>();
      bySource.set(s, byDevice);
      let m = byDevice.get(device);
      if (m === undefined) {
        m = await loadModelSource(s, device);
        byDevice.set(device, m);
      }
      loaded.push(m);
    }
  } catch (err) {
    releaseLoaded(loaded);
    throw err;
  }
  return loaded;
}

/** Frees the models this package loaded, each once. */
export function releaseLoaded(models: readonly LoadedModel[]): void {
  for (const m of new Set(models)) if (m.owned) m.model.dispose();
}

// Letters, digits, spaces, punctuation, accents, CJK, emoji and a tag-like run: enough for two
// different tokenizers to differ on it.
const PROBE = "The quick brown fox jumps over the lazy dog.\n  0123456789 <agent_0> ÄÖÜ àéîõü ¿¡ 日本語 🙂 def f(x): return x**2";

/**
 * Gives a comparator model the agent's tokenizer and stop ids. The comparator reads prompts
 * encoded by the agent's tokenizer and its outputs are decoded by it, so the two must share the
 * tokenizer and vocabulary; CoMLRL assumes this silently, pbrl checks it.
 */
export function pairWithAgent(loaded: LoadedModel, agent: Policy, agentIndex: number, what: string): RoundPolicy {
  const where = `${what} ${loaded.label} for agent ${agentIndex}`;
  if (loaded.tokenizer !== undefined) {
    const mine = loaded.tokenizer.encode(PROBE);
    const theirs = agent.tokenizer.encode(PROBE);
    if (loaded.tokenizer.vocabSize !== agent.tokenizer.vocabSize || mine.join() !== theirs.join()) {
      throw new VocabularyMismatchError(
        `${where}: its tokenizer differs from the agent's (vocabulary ${loaded.tokenizer.vocabSize} vs ${agent.tokenizer.vocabSize} tokens, ` +
          `a probe text encodes to different ids); a local comparator reads the agent's token ids, so it must use the agent's tokenizer and vocabulary`,
      );
    }
  }
  const vocab = loaded.model.config.vocabSize;
  if (vocab < agent.tokenizer.vocabSize) {
    throw new VocabularyMismatchError(`${where}: its embedding has ${vocab} rows, fewer than the agent tokenizer's ${agent.tokenizer.vocabSize} tokens`);
  }
  // A larger (padded) embedding can emit ids the agent's tokenizer lacks: then only texts go out.
  const sharesAgentVocabulary = vocab === agent.model.config.vocabSize;
  return { model: loaded.model, tokenizer: agent.tokenizer, eosTokenIds: agent.eosTokenIds, padTokenId: agent.padTokenId, sharesAgentVocabulary };
}

/**
 * The sources of a `model` comparator, one per agent: comparator_agents (one per agent) or
 * comparator_model_name for every agent.
 */
export function decentralizedModelSources(
  modelName: ModelSource | null | undefined,
  comparatorAgents: readonly ModelSource[] | null | undefined,
  numAgents: number,
): ModelSource[] {
  if (comparatorAgents !== null && comparatorAgents !== undefined) {
    if (comparatorAgents.length !== numAgents)
      throw new RangeError(`comparator_agents: has ${comparatorAgents.length} entries; give one per agent (${numAgents})`);
    return [...comparatorAgents];
  }
  if (modelName === null || modelName === undefined) throw new Error('comparator_policy="model" needs comparator_model_name or comparator_agents');
  return Array.from({ length: numAgents }, () => modelName);
}

/**
 * The one model of a centralized `model` comparator: comparator_agents' only entry or its entry at
 * the centralized index, else comparator_model_name.
 */
export function centralizedModelSource(
  modelName: ModelSource | null | undefined,
  comparatorAgents: readonly ModelSource[] | null | undefined,
  index: number,
): ModelSource {
  if (comparatorAgents !== null && comparatorAgents !== undefined) {
    const pick = comparatorAgents.length === 1 ? comparatorAgents[0] : comparatorAgents[index];
    if (pick === undefined)
      throw new RangeError(
        `comparator_agents: has ${comparatorAgents.length} entries and no entry ${index} for comparator_centralized_agent_index=${index}; give one entry or one per agent`,
      );
    return pick;
  }
  if (modelName === null || modelName === undefined) throw new Error('comparator_policy="model" needs comparator_model_name or comparator_agents');
  return modelName;
}

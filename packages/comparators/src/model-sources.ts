import { loadPretrained, type CausalLM, type Pretrained, type Tokenizer } from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";
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

export async function loadModelSource(source: ModelSource): Promise<LoadedModel> {
  if (typeof source === "string") {
    const p = await loadPretrained(source);
    return { model: p.model, tokenizer: p.tokenizer, owned: true, label: source };
  }
  if ("model" in source) return { model: source.model, tokenizer: source.tokenizer, owned: false, label: source.dir };
  return { model: source, tokenizer: undefined, owned: false, label: "a CausalLM object" };
}

/**
 * Loads each source once, sharing the model between agents that name the same source (a frozen
 * model is only read). On failure, frees what was loaded before rethrowing.
 */
export async function loadModelSources(sources: readonly ModelSource[]): Promise<LoadedModel[]> {
  const bySource = new Map<ModelSource, LoadedModel>();
  try {
    for (const s of sources) if (!bySource.has(s)) bySource.set(s, await loadModelSource(s));
  } catch (err) {
    releaseLoaded([...bySource.values()]);
    throw err;
  }
  return sources.map((s) => bySource.get(s)!);
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
export function decentralizedModelSources(modelName: ModelSource | null | undefined, comparatorAgents: readonly ModelSource[] | null | undefined, numAgents: number): ModelSource[] {
  if (comparatorAgents !== null && comparatorAgents !== undefined) {
    if (comparatorAgents.length !== numAgents) throw new RangeError(`comparator_agents: has ${comparatorAgents.length} entries; give one per agent (${numAgents})`);
    return [...comparatorAgents];
  }
  if (modelName === null || modelName === undefined) throw new Error('comparator_policy="model" needs comparator_model_name or comparator_agents');
  return Array.from({ length: numAgents }, () => modelName);
}

/**
 * The one model of a centralized `model` comparator: comparator_agents' only entry or its entry at
 * the centralized index, else comparator_model_name.
 */
export function centralizedModelSource(modelName: ModelSource | null | undefined, comparatorAgents: readonly ModelSource[] | null | undefined, index: number): ModelSource {
  if (comparatorAgents !== null && comparatorAgents !== undefined) {
    const pick = comparatorAgents.length === 1 ? comparatorAgents[0] : comparatorAgents[index];
    if (pick === undefined) throw new RangeError(`comparator_agents: has ${comparatorAgents.length} entries and no entry ${index} for comparator_centralized_agent_index=${index}; give one entry or one per agent`);
    return pick;
  }
  if (modelName === null || modelName === undefined) throw new Error('comparator_policy="model" needs comparator_model_name or comparator_agents');
  return modelName;
}

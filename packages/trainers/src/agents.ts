import * as path from "node:path";
import type { RngStream } from "@pbrl/core-tensor";
import {
  CausalLM,
  loadAdapterOnto,
  loadPretrained,
  savePretrained,
  type GenerationDefaults,
  type LoraSettings,
  type Pretrained,
  type SaveDtype,
  type Tokenizer,
} from "@pbrl/models";
import type { Policy } from "@pbrl/preference-data";

/** Where an agent comes from: a checkpoint folder or hub id, a built model, or a loaded checkpoint. */
export type AgentSource = string | CausalLM | Pretrained;

/** An agent ready to sample and train, with the ids its tokenizer and checkpoint define. */
export interface ResolvedAgent extends Policy {
  generation: GenerationDefaults | undefined;
  /** The source string, or a description of the object, for logs and errors. */
  source: string;
  /** A checkpoint folder or hub id the agent was loaded from (undefined for a model object): where a reward model or critic can load the same backbone. */
  checkpoint: string | undefined;
}

export class AgentSourceError extends Error {
  override name = "AgentSourceError";
}

function stopAndPad(
  model: CausalLM,
  tokenizer: Tokenizer,
  generation: GenerationDefaults | undefined,
  source: string,
): { eosTokenIds: number[]; padTokenId: number } {
  const eos = generation?.eosTokenIds.length
    ? generation.eosTokenIds
    : model.config.eosTokenIds.length
      ? model.config.eosTokenIds
      : tokenizer.eosTokenId !== undefined
        ? [tokenizer.eosTokenId]
        : [];
  if (eos.length === 0)
    throw new AgentSourceError(`${source}: no EOS token is defined (generation_config.json, config.json or the tokenizer); generation could never stop`);
  // As CoMLRL: a tokenizer without a pad token pads with EOS.
  const pad = tokenizer.padTokenId ?? generation?.padTokenId ?? model.config.padTokenId ?? eos[0]!;
  return { eosTokenIds: eos, padTokenId: pad };
}

function asResolved(
  p: { model: CausalLM; tokenizer: Tokenizer | undefined; generation: GenerationDefaults | undefined },
  source: string,
  checkpoint: string | undefined,
): ResolvedAgent {
  if (p.tokenizer === undefined) throw new AgentSourceError(`${source}: no tokenizer (the checkpoint has no tokenizer.json and none was passed)`);
  return { model: p.model, tokenizer: p.tokenizer, generation: p.generation, source, checkpoint, ...stopAndPad(p.model, p.tokenizer, p.generation, source) };
}

/**
 * Resolves the agents of a run: `agentModel` (one source loaded for every agent, each with its
 * own weights) or `agents` (one source per agent). Model objects need `tokenizer` (one shared,
 * or one per agent).
 */
export async function resolveAgents(options: {
  agents?: readonly AgentSource[] | undefined;
  agentModel?: string | undefined;
  tokenizer?: Tokenizer | readonly Tokenizer[] | undefined;
  numAgents: number;
  /** One actor writes every role (collaboration_mode="centralized"). */
  centralized?: boolean;
  /** Where each agent's weights live (agent_devices resolved; "auto" leaves them where they load). */
  devices?: readonly string[];
  /**
   * use_peft: every agent is a LoRA view of its checkpoint, frozen and shared by the agents that
   * load the same one, with a fresh adapter drawn from `initRng(agent)`; an agent source that is a
   * PEFT adapter folder keeps training its adapter.
   */
  lora?: { settings: LoraSettings; initRng: (agent: number) => RngStream };
}): Promise<ResolvedAgent[]> {
  const out = await loadAgents(options);
  const devices = options.devices;
  if (devices === undefined) return out;
  // A model object, or one checkpoint cloned for every agent, is copied to a device that is not its own
  // (a LoRA view: its adapter, over one copy of its base per device).
  return out.map((ag, i) => {
    if (devices[i] === undefined || devices[i] === "auto" || ag.model.device() === devices[i]) return ag;
    const moved = ag.model.clone(devices[i]);
    if (ag.model.adapter !== undefined) ag.model.dispose();
    return { ...ag, model: moved };
  });
}

/** A loaded agent model as the run trains it: as it is, or (use_peft) a LoRA view with a fresh adapter unless it has one. */
function trainable(model: CausalLM, source: string, i: number, lora: Parameters<typeof resolveAgents>[0]["lora"]): CausalLM {
  if (lora === undefined) {
    if (model.adapter !== undefined)
      throw new AgentSourceError(
        `${source} is a LoRA adapter folder; training it needs use_peft=true (or merge it into a full checkpoint first: pbrl convert --model ${source} --out DIR --merge)`,
      );
    return model;
  }
  return model.adapter !== undefined ? model : model.withLora(lora.settings, lora.initRng(i));
}

async function loadAgents(options: Parameters<typeof resolveAgents>[0]): Promise<ResolvedAgent[]> {
  const { agents, agentModel, numAgents } = options;
  if (options.centralized === true && agents !== undefined && agents.length !== 1) {
    throw new AgentSourceError(
      `agents: got ${agents.length} agent sources, but collaboration_mode="centralized" trains exactly one actor model that writes every role; pass one source (or agentModel)`,
    );
  }
  if ((agents === undefined) === (agentModel === undefined))
    throw new AgentSourceError("pass exactly one of `agentModel` (a checkpoint for every agent) or `agents` (one source per agent)");
  const tokenizerFor = (i: number): Tokenizer | undefined => {
    const t = options.tokenizer;
    if (t === undefined || !Array.isArray(t)) return t as Tokenizer | undefined;
    if (t.length !== numAgents)
      throw new AgentSourceError(`tokenizer: got ${t.length} tokenizers for num_agents=${numAgents}; pass one shared tokenizer or one per agent`);
    return t[i];
  };
  const lora = options.lora;
  if (agentModel !== undefined) {
    const first = await loadPretrained(agentModel, { device: options.devices?.[0] ?? "auto" });
    const model0 = trainable(first.model, agentModel, 0, lora);
    const out = [asResolved({ ...first, model: model0, tokenizer: tokenizerFor(0) ?? first.tokenizer }, agentModel, agentModel)];
    for (let i = 1; i < numAgents; i++) {
      // LoRA: the same frozen base for every agent, each with its adapter (a loaded one copied); else a full copy each.
      const model = lora === undefined || first.model.adapter !== undefined ? model0.clone() : first.model.withLora(lora.settings, lora.initRng(i));
      out.push({ ...out[0]!, model, tokenizer: tokenizerFor(i) ?? out[0]!.tokenizer });
    }
    if (model0 !== first.model) first.model.dispose(); // the views keep the base
    return out;
  }
  if (agents!.length !== numAgents) throw new AgentSourceError(`agents: got ${agents!.length} agent source(s) but num_agents=${numAgents}`);
  const out: ResolvedAgent[] = [];
  // Agents naming the same checkpoint share its base weights under LoRA (loaded once).
  const bases = new Map<string, Pretrained>();
  try {
    for (const [i, src] of agents!.entries()) {
      if (typeof src === "string") {
        const shared = lora !== undefined ? bases.get(src) : undefined;
        const p = shared ?? (await loadPretrained(src, { device: options.devices?.[i] ?? "auto" }));
        if (lora !== undefined && shared === undefined && p.model.adapter === undefined) bases.set(src, p);
        out.push(asResolved({ ...p, model: trainable(p.model, src, i, lora), tokenizer: tokenizerFor(i) ?? p.tokenizer }, src, src));
      } else if (src instanceof CausalLM) {
        out.push(
          asResolved(
            { model: trainable(src, `agents[${i}]`, i, lora), tokenizer: tokenizerFor(i), generation: undefined },
            `agents[${i}] (a ${src.config.modelType} model object)`,
            undefined,
          ),
        );
      } else {
        out.push(asResolved({ ...src, model: trainable(src.model, src.dir, i, lora), tokenizer: tokenizerFor(i) ?? src.tokenizer }, src.dir, src.dir));
      }
    }
  } finally {
    for (const p of bases.values()) p.model.dispose(); // the agents' views keep what they use
  }
  return out;
}

/**
 * An agent as a run saved it (`dir`, written by saveAgents), read back like `like` is: a full
 * checkpoint onto `device`, or a LoRA adapter onto `like`'s shared base (no second copy of it).
 */
export async function loadSavedAgent(dir: string, like: CausalLM, device: string): Promise<CausalLM> {
  if (like.adapter !== undefined) {
    if (device === "auto" || device === like.device()) return loadAdapterOnto(dir, like);
    const base = like.baseModel();
    const moved = base.clone(device); // a reference on another device: a copy of the base there
    base.dispose();
    try {
      return await loadAdapterOnto(dir, moved);
    } finally {
      moved.dispose(); // the adapter's view keeps it
    }
  }
  return (await loadPretrained(dir, device === "auto" ? {} : { device })).model;
}

/** Writes every agent to `<dir>/agent_<i>` as a Hugging Face checkpoint folder, its weights stored as `dtype` (default float32). */
export async function saveAgents(dir: string, agents: readonly ResolvedAgent[], dtype: SaveDtype = "float32"): Promise<void> {
  for (const [i, ag] of agents.entries())
    await savePretrained(path.join(dir, `agent_${i}`), { model: ag.model, tokenizer: ag.tokenizer, generation: ag.generation }, { dtype });
}

/** Frees the agents' weights, once per model (agents may share one). */
export function disposeAgents(agents: readonly ResolvedAgent[]): void {
  for (const model of new Set(agents.map((ag) => ag.model))) model.dispose();
}

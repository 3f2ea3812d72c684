import type { RngStream } from "@pbrl/core-tensor";
import { generate, type CausalLM, type Tokenizer } from "@pbrl/models";

/** One agent's sampled answers to one prompt. */
export interface AgentSamples {
  promptIds: number[];
  /** Generated token ids per candidate, the stop token included when one ended it. */
  tokens: number[][];
  texts: string[];
}

/**
 * Produces candidates: for each item's per-agent prompts, `n` answers per agent. The trainers'
 * policies implement it with `PolicySampler` (or `ParallelPolicySampler`); a comparator or a
 * test can implement it otherwise.
 */
export interface CandidateSampler {
  sample(prompts: readonly (readonly string[])[], n: number): AgentSamples[][] | Promise<AgentSamples[][]>;
}

/** A policy that can answer prompts: a model with its tokenizer and stop ids. */
export interface Policy {
  model: CausalLM;
  tokenizer: Tokenizer;
  eosTokenIds: readonly number[];
  padTokenId: number;
}

export interface GenerationSettings {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  /** null disables top-k, as CoMLRL's top_k=None. */
  topK: number | null;
  /** Upper bound on rows (prompts × candidates) per generate call. */
  maxBatchRows: number;
}

/**
 * One agent's candidates: `n` rows per prompt, prompt-major, each the generated ids (the stop
 * token included when one ended it), in left-padded generate calls of at most maxBatchRows rows.
 */
export function sampleAgentRows(policy: Pick<Policy, "model" | "eosTokenIds" | "padTokenId">, promptIds: readonly (readonly number[])[], n: number, settings: GenerationSettings, rng: RngStream): number[][] {
  const perCall = Math.max(1, Math.floor(settings.maxBatchRows / n));
  const rows: number[][] = [];
  for (let start = 0; start < promptIds.length; start += perCall) {
    const out = generate(policy.model, promptIds.slice(start, start + perCall), {
      maxNewTokens: settings.maxNewTokens,
      temperature: settings.temperature,
      topP: settings.topP,
      topK: settings.topK ?? 0,
      numReturnSequences: n,
      eosTokenIds: policy.eosTokenIds,
      padTokenId: policy.padTokenId,
      rng,
    });
    for (const r of out) rows.push(r.tokens);
  }
  return rows;
}

/**
 * What every sampler does around generation: each agent's prompts encoded with its tokenizer and
 * one stream split off the sampler's per agent, so the agents' draws do not depend on one
 * another (they may generate one after the other or all at once); afterwards, each agent's rows
 * decoded into its samples per prompt.
 */
function prepare(policies: readonly Policy[], prompts: readonly (readonly string[])[], rng: RngStream): { ids: number[][][]; streams: RngStream[] } {
  const ids = policies.map((policy, a) =>
    prompts.map((p) => {
      const text = p[a];
      if (text === undefined) throw new RangeError(`no prompt for agent ${a}`);
      return policy.tokenizer.encode(text);
    }),
  );
  return { ids, streams: policies.map(() => rng.split()) };
}

function assemble(policies: readonly Policy[], ids: readonly number[][][], rows: readonly number[][][], n: number): AgentSamples[][] {
  const out: AgentSamples[][] = ids[0]?.map(() => []) ?? [];
  policies.forEach((policy, a) =>
    ids[a]!.forEach((promptIds, k) => {
      const mine = rows[a]!.slice(k * n, (k + 1) * n);
      out[k]![a] = { promptIds, tokens: mine, texts: mine.map((t) => policy.tokenizer.decode(t)) };
    }),
  );
  return out;
}

/**
 * Samples every agent's candidates with its own policy in this thread, agent after agent,
 * batching all prompts of a call (items × candidates rows, up to maxBatchRows) into one
 * left-padded generation per agent.
 */
export class PolicySampler implements CandidateSampler {
  constructor(
    private readonly policies: readonly Policy[],
    private readonly settings: GenerationSettings,
    private readonly rng: RngStream,
  ) {}

  sample(prompts: readonly (readonly string[])[], n: number): AgentSamples[][] {
    const { ids, streams } = prepare(this.policies, prompts, this.rng);
    const rows = this.policies.map((policy, a) => sampleAgentRows(policy, ids[a]!, n, this.settings, streams[a]!));
    return assemble(this.policies, ids, rows, n);
  }
}

/** Generates one agent's rows elsewhere (a worker thread holding the agent), as {@link sampleAgentRows} would here. */
export type AgentRowsGenerator = (agent: number, promptIds: number[][], n: number, settings: GenerationSettings, rng: RngStream) => Promise<number[][]>;

/**
 * {@link PolicySampler} with every agent generating at once, wherever `generateRows` runs it.
 * Given the same stream it returns exactly what PolicySampler returns. `sample` calls
 * `generateRows` for every agent before it first awaits, so work handed elsewhere starts while
 * the caller goes on (to a comparator generating in this thread).
 */
export class ParallelPolicySampler implements CandidateSampler {
  constructor(
    private readonly policies: readonly Policy[],
    private readonly settings: GenerationSettings,
    private readonly rng: RngStream,
    private readonly generateRows: AgentRowsGenerator,
  ) {}

  async sample(prompts: readonly (readonly string[])[], n: number): Promise<AgentSamples[][]> {
    const { ids, streams } = prepare(this.policies, prompts, this.rng);
    const rows = await Promise.all(this.policies.map((_, a) => this.generateRows(a, ids[a]!, n, this.settings, streams[a]!)));
    return assemble(this.policies, ids, rows, n);
  }
}

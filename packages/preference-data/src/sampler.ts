import type { RngStream } from "@pbrl/core-tensor";
import { generate, type CausalLM, type Tokenizer } from "@pbrl/models";
import { encodePrompt } from "./chat.js";
import { checkMaxPromptLength, fitPromptIds } from "./prompt-length.js";
import type { Prompt } from "./types.js";

/** One agent's sampled answers to one prompt. */
export interface AgentSamples {
  /**
   * The prompt as text: the formatter's string, or its chat messages rendered with this agent's
   * chat template. What rewards receive and records store. The samplers here always set it; a
   * sampler given only text prompts may leave it out.
   */
  promptText?: string;
  /** The prompt generation started from (cut to max_prompt_length when that is set). */
  promptIds: number[];
  /** The prompt's token count before max_prompt_length cut it; absent when it was not cut. */
  truncatedFrom?: number;
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
  /**
   * `prompts[k][agent]`: text, or chat messages the agent renders with its chat template (then
   * `promptText` must hold the rendered text). `itemIndices[k]`: the dataset position of prompt
   * k, to name it in errors (default: its position in this call).
   */
  sample(prompts: readonly (readonly Prompt[])[], n: number, itemIndices?: readonly number[]): AgentSamples[][] | Promise<AgentSamples[][]>;
}

/** A policy that can answer prompts: a model with its tokenizer and stop ids. */
export interface Policy {
  model: CausalLM;
  tokenizer: Tokenizer;
  eosTokenIds: readonly number[];
  padTokenId: number;
  /**
   * Prompts rendered and encoded before the run (PromptBook.idsByText), by their text: a text
   * prompt found here is generated from these ids, not rendered or encoded again (the trainers
   * give their agents every item's prompt this way, so no formatter or template runs in a round).
   */
  renderedPrompts?: ReadonlyMap<string, readonly number[]> | undefined;
}

export interface GenerationSettings {
  maxNewTokens: number;
  temperature: number;
  topP: number;
  /** null disables top-k, as CoMLRL's top_k=None. */
  topK: number | null;
  /** Upper bound on rows (prompts × candidates) per generate call. */
  maxBatchRows: number;
  /**
   * max_prompt_length (TRL's): prompts longer than this many tokens are cut from the left;
   * null or absent: none is cut. Either way a prompt that, with maxNewTokens, does not fit the
   * model's max_position_embeddings is a PromptTooLongError.
   */
  maxPromptLength?: number | null | undefined;
}

/**
 * One agent's candidates: `n` rows per prompt, prompt-major, each the generated ids (the stop
 * token included when one ended it), in left-padded generate calls of at most maxBatchRows rows.
 */
export function sampleAgentRows(
  policy: Pick<Policy, "model" | "eosTokenIds" | "padTokenId">,
  promptIds: readonly (readonly number[])[],
  n: number,
  settings: GenerationSettings,
  rng: RngStream,
): number[][] {
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
 * What every sampler does around generation: each agent's prompts encoded with its tokenizer
 * (chat messages rendered with its chat template first, see encodePrompt; a text too long in bytes
 * for the context refused or cut first), or read from its renderedPrompts, and
 * fitted to its model's context (cut to max_prompt_length when set), and one stream split off the
 * sampler's per agent, so the agents' draws do not depend on one another (they may generate one
 * after the other or all at once); afterwards, each agent's rows decoded into its samples per prompt.
 */
function prepare(
  policies: readonly Policy[],
  prompts: readonly (readonly Prompt[])[],
  settings: GenerationSettings,
  rng: RngStream,
  itemIndices: readonly number[] | undefined,
): Prepared {
  checkMaxPromptLength(settings.maxPromptLength);
  if (itemIndices !== undefined && itemIndices.length !== prompts.length)
    throw new RangeError(`itemIndices has ${itemIndices.length} entries for ${prompts.length} prompts`);
  const truncatedFrom: (number | undefined)[][] = [];
  const texts: string[][] = [];
  const ids = policies.map((policy, a) => {
    const limits = {
      maxPromptLength: settings.maxPromptLength,
      maxNewTokens: settings.maxNewTokens,
      maxPositionEmbeddings: policy.model.config.maxPositionEmbeddings,
    };
    const cut: (number | undefined)[] = [];
    const mine: string[] = [];
    truncatedFrom.push(cut);
    texts.push(mine);
    return prompts.map((p, k) => {
      const prompt = p[a];
      if (prompt === undefined) throw new RangeError(`no prompt for agent ${a}`);
      const itemIndex = itemIndices?.[k] ?? k;
      const itemName = itemIndices === undefined ? `prompt ${k} of this sampler call` : `item ${itemIndex}`;
      const known = typeof prompt === "string" ? policy.renderedPrompts?.get(prompt) : undefined;
      const encoded =
        known !== undefined ? { text: prompt as string, ids: known } : encodePrompt(policy.tokenizer, prompt, { agent: a, itemIndex, itemName }, limits);
      const fitted = fitPromptIds(encoded.ids, limits, { itemIndex, agent: a, itemName });
      cut.push(fitted.truncatedFrom);
      mine.push(encoded.text);
      return fitted.ids;
    });
  });
  return { ids, texts, truncatedFrom, streams: policies.map(() => rng.split()) };
}

/** Each agent's prompts ready to generate from: `ids[agent][k]`, with their texts and cut lengths. */
interface Prepared {
  ids: number[][][];
  texts: string[][];
  truncatedFrom: (number | undefined)[][];
  streams: RngStream[];
}

function assemble(policies: readonly Policy[], prepared: Prepared, rows: readonly number[][][], n: number): AgentSamples[][] {
  const { ids, texts, truncatedFrom } = prepared;
  const out: AgentSamples[][] = ids[0]?.map(() => []) ?? [];
  policies.forEach((policy, a) =>
    ids[a]!.forEach((promptIds, k) => {
      const mine = rows[a]!.slice(k * n, (k + 1) * n);
      const cutFrom = truncatedFrom[a]![k];
      out[k]![a] = {
        promptText: texts[a]![k]!,
        promptIds,
        ...(cutFrom !== undefined && { truncatedFrom: cutFrom }),
        tokens: mine,
        texts: mine.map((t) => policy.tokenizer.decode(t)),
      };
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

  sample(prompts: readonly (readonly Prompt[])[], n: number, itemIndices?: readonly number[]): AgentSamples[][] {
    const prepared = prepare(this.policies, prompts, this.settings, this.rng, itemIndices);
    const rows = this.policies.map((policy, a) => sampleAgentRows(policy, prepared.ids[a]!, n, this.settings, prepared.streams[a]!));
    return assemble(this.policies, prepared, rows, n);
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

  async sample(prompts: readonly (readonly Prompt[])[], n: number, itemIndices?: readonly number[]): Promise<AgentSamples[][]> {
    const prepared = prepare(this.policies, prompts, this.settings, this.rng, itemIndices);
    const rows = await Promise.all(this.policies.map((_, a) => this.generateRows(a, prepared.ids[a]!, n, this.settings, prepared.streams[a]!)));
    return assemble(this.policies, prepared, rows, n);
  }
}

/**
 * Each agent's prompt as text, `texts[k][agent]`, from a sampler's answer: what rewards receive and
 * pair records store. A sampler that returns no `promptText` was given text prompts, which are
 * their own text; for chat messages it must report what it rendered.
 */
export function promptTexts(
  prompts: readonly (readonly Prompt[])[],
  samples: readonly (readonly AgentSamples[])[],
  itemIndices: readonly number[],
): string[][] {
  return samples.map((agents, k) =>
    agents.map((s, a) => {
      if (s.promptText !== undefined) return s.promptText;
      const given = prompts[k]?.[a];
      if (typeof given === "string") return given;
      throw new TypeError(
        `the sampler returned no promptText for agent ${a} on item ${itemIndices[k] ?? k}; a CandidateSampler given chat messages must return the text it rendered from them`,
      );
    }),
  );
}

import type { Tokenizer } from "@pbrl/models";
import type { AgentPairTokens } from "./collect.js";
import { encodePromptText } from "./chat.js";
import type { PairRecord } from "./pair-record.js";
import { checkMaxPromptLength, truncatePromptIds } from "./prompt-length.js";

export class RetokenizeError extends Error {
  override name = "RetokenizeError";
}

/** What tokenizing a pair needs of each agent. */
export interface AgentTokenizing {
  tokenizer: Tokenizer;
  eosTokenIds: readonly number[];
}

/**
 * The token ids a stored pair trains on, per agent. Records written by pbrl carry the ids that
 * were scored (EOS included); they are used after checking that they decode to the stored text.
 * Records without ids (from another tool) are encoded: the prompt as the sampler encodes text
 * prompts (special tokens added unless the text already starts with them, as a prompt rendered
 * from a chat template does; cut from the left to `options.maxPromptLength` when set, as
 * sampling cuts them), the completions without special tokens.
 */
export function pairTokensFromRecord(
  record: PairRecord,
  agents: readonly AgentTokenizing[],
  where = "pair",
  options: { maxPromptLength?: number | null | undefined } = {},
): AgentPairTokens[] {
  checkMaxPromptLength(options.maxPromptLength);
  if (record.prompts.length !== agents.length) {
    throw new RetokenizeError(`${where} has ${record.prompts.length} agent entries but the run has ${agents.length} agents`);
  }
  return agents.map(({ tokenizer }, a) => {
    const stored = (key: "winner_token_ids" | "loser_token_ids", text: string): number[] => {
      const ids = record[key]?.[a];
      if (ids === undefined) return tokenizer.encode(text, { addSpecialTokens: false });
      if (tokenizer.decode(ids) !== text)
        throw new RetokenizeError(`${where}: ${key}[${a}] does not decode to the stored completion text; the file was edited or written for another tokenizer`);
      return [...ids];
    };
    const promptIds = record.prompt_token_ids?.[a] ?? truncatePromptIds(encodePromptText(tokenizer, record.prompts[a]!), options.maxPromptLength).ids;
    return {
      promptIds: [...promptIds],
      winnerIds: stored("winner_token_ids", record.winner_completions[a]!),
      loserIds: stored("loser_token_ids", record.loser_completions[a]!),
    };
  });
}

/** The token ids of one candidate for one agent: the given ids, or its text encoded, EOS appended if it stopped. */
export function candidateTokens(text: string, given: readonly number[] | undefined, stopped: boolean | undefined, agent: AgentTokenizing): number[] {
  if (given !== undefined) return [...given];
  const ids = agent.tokenizer.encode(text, { addSpecialTokens: false });
  if (stopped === true && agent.eosTokenIds.length > 0) ids.push(agent.eosTokenIds[0]!);
  return ids;
}

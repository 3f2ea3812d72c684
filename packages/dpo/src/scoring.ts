import { tf } from "@pbrl/core-tensor";
import { buildScoringBatch, completionLogProbs, type CausalLM, type ScoringItem } from "@pbrl/models";
import type { AgentPairTokens } from "@pbrl/preference-data";

/**
 * The tokens of a completion that decentralized MADPO scores. Completions are exactly the
 * generated tokens (trimmed by generated length, so an EOS that equals the pad id is kept);
 * CoMLRL then leaves out the last token, which `scoreLastToken` includes.
 */
export function scoredTokens(completion: readonly number[], scoreLastToken: boolean): number[] {
  return scoreLastToken ? [...completion] : completion.slice(0, Math.max(0, completion.length - 1));
}

/**
 * Differentiable per-pair margins δ = log π(w|h) − log π(l|h) for one agent, winners and losers
 * of the whole batch scored in one forward pass.
 */
export function agentMargins(model: CausalLM, pairs: readonly AgentPairTokens[], options: { scoreLastToken: boolean; padTokenId: number }): tf.Tensor1D {
  const items: ScoringItem[] = [
    ...pairs.map((t) => ({ promptIds: t.promptIds, completionIds: scoredTokens(t.winnerIds, options.scoreLastToken) })),
    ...pairs.map((t) => ({ promptIds: t.promptIds, completionIds: scoredTokens(t.loserIds, options.scoreLastToken) })),
  ];
  return tf.tidy(() => {
    const { tokens, sums } = completionLogProbs(model, buildScoringBatch(items, options.padTokenId));
    // Stryker disable next-line BlockStatement,CallExpression: the tidy frees it too; this only frees it before the slices
    tokens.dispose();
    const n = pairs.length;
    return tf.sub(tf.slice(sums, [0], [n]), tf.slice(sums, [n], [n])) as tf.Tensor1D;
  });
}
